// The oracle test: for every row binutils' readelf prints for a real binary,
// the table's row in effect at that pc must say the same thing about the CFA,
// the return address and rbp. Rows readelf shows with rules the contract cannot
// express must come out WS_CFA_INVALID; they are counted and printed.
#include <gtest/gtest.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>

#include "tests/support/readelf_oracle.h"
#include "agent/unwind/unwind_table.h"

namespace warpscope::testing {
namespace {

struct Expected {
  uint8_t type;
  uint16_t cfa_offset = 0;
  int8_t fp_offset = 0;
  bool inexpressible = false;
};

const Expected kInexpressible{WS_CFA_INVALID, 0, 0, true};

bool ParseRegisterOffset(const std::string& s, std::string* reg, int64_t* offset) {
  const size_t sign = s.find_first_of("+-", 1);
  if (sign == std::string::npos) return false;
  *reg = s.substr(0, sign);
  *offset = std::stoll(s.substr(sign));
  return true;
}

Expected Expect(const ReadelfRow& r, bool signal_frame, bool in_plt) {
  if (signal_frame) return {WS_CFA_SIGNAL};
  if (r.ra.empty() || r.ra == "u") return {WS_CFA_END};
  if (r.ra != "c-8") return kInexpressible;
  int8_t fp_offset = 0;
  if (!(r.rbp.empty() || r.rbp == "u" || r.rbp == "s")) {
    if (r.rbp[0] != 'c') return kInexpressible;  // register, expression, val_offset
    const int64_t v = std::stoll(r.rbp.substr(1));
    if (v == 0 || v % 8 != 0 || v < -128 * 8 || v > 127 * 8) return kInexpressible;
    fp_offset = static_cast<int8_t>(v / 8);
  }
  if (r.cfa == "exp") return in_plt ? Expected{WS_CFA_PLT, 11, fp_offset} : kInexpressible;
  std::string reg;
  int64_t offset = 0;
  if (!ParseRegisterOffset(r.cfa, &reg, &offset)) return kInexpressible;
  if ((reg != "rsp" && reg != "rbp") || offset < 0 || offset > 65535) return kInexpressible;
  return {reg == "rsp" ? uint8_t{WS_CFA_SP} : uint8_t{WS_CFA_FP}, static_cast<uint16_t>(offset), fp_offset};
}

struct OracleReport {
  uint64_t readelf_fdes = 0;
  uint64_t checked_fdes = 0;
  uint64_t debug_frame_fdes = 0;
  uint64_t rows = 0;
  uint64_t tolerated = 0;  // inexpressible in the contract, and WS_CFA_INVALID in the table
  uint64_t plt = 0;
  uint64_t fp = 0;
  uint64_t end = 0;
  uint64_t signal = 0;
  uint64_t gaps = 0;
  uint64_t unparsed = 0;
  std::vector<std::string> mismatches;
};

std::string Describe(const ReadelfRow& r, const ws_unwind_entry* e) {
  char buf[256];
  std::snprintf(buf, sizeof(buf), "pc 0x%lx readelf cfa=%s rbp=%s ra=%s; table type=%d cfa_offset=%d fp_offset=%d",
                static_cast<unsigned long>(r.loc), r.cfa.c_str(), r.rbp.c_str(), r.ra.c_str(),
                e ? e->cfa_type : -1, e ? e->cfa_offset : -1, e ? e->fp_offset : -1);
  return buf;
}

void CheckAgainstReadelf(const std::string& path, OracleReport* report) {
  StatusOr<UnwindTable> table = BuildUnwindTable(path);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  StatusOr<ReadelfFrames> frames = ReadelfFrameTables(path);
  ASSERT_TRUE(frames.ok()) << frames.status().ToString();
  StatusOr<std::vector<ReadelfSection>> sections = ReadelfSections(path);
  ASSERT_TRUE(sections.ok()) << sections.status().ToString();
  report->unparsed = frames->unparsed_rows;
  report->readelf_fdes = frames->fdes.size();
  EXPECT_EQ(table->stats.fdes, frames->fdes.size()) << path;
  EXPECT_EQ(table->stats.fdes_skipped, 0u) << path;

  auto in_plt = [&](uint64_t pc) {
    for (const ReadelfSection& s : *sections) {
      if (s.name.rfind(".plt", 0) == 0 && pc >= s.addr && pc < s.addr + s.size) return true;
    }
    return false;
  };

  // The table's FDE selection: by start, .eh_frame first on ties, overlaps dropped.
  std::vector<const ReadelfFde*> fdes;
  for (const ReadelfFde& f : frames->fdes) {
    if (f.end > f.begin) fdes.push_back(&f);
  }
  std::stable_sort(fdes.begin(), fdes.end(), [](const ReadelfFde* a, const ReadelfFde* b) {
    if (a->begin != b->begin) return a->begin < b->begin;
    return (a->section == ".eh_frame") > (b->section == ".eh_frame");
  });
  std::vector<const ReadelfFde*> kept;
  for (const ReadelfFde* f : fdes) {
    if (!kept.empty() && f->begin < kept.back()->end) continue;
    kept.push_back(f);
  }

  for (size_t i = 0; i < kept.size(); ++i) {
    const ReadelfFde& fde = *kept[i];
    ++report->checked_fdes;
    if (fde.section == ".debug_frame") ++report->debug_frame_fdes;
    for (const ReadelfRow& row : fde.rows) {
      if (row.loc < fde.begin || row.loc >= fde.end) continue;
      ++report->rows;
      const Expected want = Expect(row, fde.signal_frame, in_plt(row.loc));
      const ws_unwind_entry* got = table->Lookup(row.loc);
      const uint8_t got_type = got == nullptr ? uint8_t{WS_CFA_NONE} : got->cfa_type;
      bool ok = false;
      if (want.inexpressible) {
        ok = got_type == WS_CFA_INVALID;
        report->tolerated += ok;
      } else if (want.type == WS_CFA_END || want.type == WS_CFA_SIGNAL) {
        ok = got_type == want.type;
      } else if (want.type == WS_CFA_PLT && got_type == WS_CFA_INVALID) {
        ok = true;  // a PLT expression with a threshold the BPF side does not take yet
        ++report->tolerated;
      } else {
        ok = got != nullptr && got_type == want.type && got->cfa_offset == want.cfa_offset &&
             got->fp_offset == want.fp_offset;
      }
      if (ok) {
        report->plt += got_type == WS_CFA_PLT;
        report->fp += got_type == WS_CFA_FP;
        report->end += got_type == WS_CFA_END;
        report->signal += got_type == WS_CFA_SIGNAL;
      } else if (report->mismatches.size() < 20) {
        report->mismatches.push_back(Describe(row, got));
      }
    }
    const bool followed = i + 1 < kept.size() && kept[i + 1]->begin == fde.end;
    if (!followed) {
      const ws_unwind_entry* gap = table->Lookup(fde.end);
      EXPECT_TRUE(gap != nullptr && gap->cfa_type == WS_CFA_NONE) << "no gap row at 0x" << std::hex << fde.end;
      ++report->gaps;
    }
  }
  std::printf(
      "%s: readelf %lu FDEs, %lu checked (%lu from .debug_frame), %lu rows: %lu plt, %lu rbp-based, %lu end, "
      "%lu signal, %lu inexpressible -> INVALID; %lu gap checks; %lu readelf rows unparsed\n",
      path.c_str(), report->readelf_fdes, report->checked_fdes, report->debug_frame_fdes, report->rows, report->plt,
      report->fp, report->end, report->signal, report->tolerated, report->gaps, report->unparsed);
  for (const std::string& m : report->mismatches) ADD_FAILURE() << path << ": " << m;
}

std::string RealPath(const char* path) {
  char buf[PATH_MAX];
  return ::realpath(path, buf) != nullptr ? std::string(buf) : std::string();
}

TEST(ReadelfOracle, FixtureEhFrame) {
  OracleReport r;
  CheckAgainstReadelf(WS_UNWIND_FIXTURE, &r);
  EXPECT_GT(r.plt, 0u);  // the lazy PLT in front of qsort/printf
  EXPECT_GT(r.fp, 0u);   // BigAlloca, Vla
  EXPECT_GT(r.end, 0u);  // _start
  EXPECT_EQ(r.unparsed, 0u);
}

TEST(ReadelfOracle, FixtureDebugFrame) {
  OracleReport r;
  CheckAgainstReadelf(WS_UNWIND_FIXTURE_DEBUG_FRAME, &r);
  EXPECT_GT(r.debug_frame_fdes, 0u);
  EXPECT_GT(r.fp, 0u);
  EXPECT_EQ(r.unparsed, 0u);
}

TEST(ReadelfOracle, Python) {
  const std::string python = RealPath("/usr/bin/python3");
  if (python.empty()) GTEST_SKIP() << "no python3";
  OracleReport r;
  CheckAgainstReadelf(python, &r);
  EXPECT_GT(r.rows, 10000u);
  EXPECT_EQ(r.unparsed, 0u);
}

TEST(ReadelfOracle, Libc) {
  const std::string libc = RealPath("/usr/lib/x86_64-linux-gnu/libc.so.6");
  if (libc.empty()) GTEST_SKIP() << "no libc.so.6";
  OracleReport r;
  CheckAgainstReadelf(libc, &r);
  EXPECT_GT(r.signal, 0u);  // __restore_rt
  EXPECT_GT(r.end, 0u);     // clone
  EXPECT_EQ(r.unparsed, 0u);
}

}  // namespace
}  // namespace warpscope::testing
