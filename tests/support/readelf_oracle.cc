#include "tests/support/readelf_oracle.h"

#include <cstdio>
#include <map>
#include <sstream>
#include <utility>

namespace warpscope::testing {
namespace {

std::vector<std::string> Tokens(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  std::string t;
  while (in >> t) {
    // Register rules print as "r3 (rbx)": one column.
    if (t[0] == '(' && !out.empty()) {
      out.back() += " " + t;
    } else {
      out.push_back(t);
    }
  }
  return out;
}

bool ParseHex(const std::string& s, uint64_t* v) {
  if (s.empty() || s.size() > 16) return false;
  for (char c : s) {
    if (!isxdigit(static_cast<unsigned char>(c))) return false;
  }
  *v = std::stoull(s, nullptr, 16);
  return true;
}

struct CieInfo {
  bool signal_frame = false;
  bool has_row = false;
  ReadelfRow row;
};

class FramesParser {
 public:
  void Line(const std::string& line) {
    if (line.rfind("Contents of the ", 0) == 0) {
      Finish();
      const size_t name_end = line.find(" section");
      section_ = line.substr(16, name_end == std::string::npos ? std::string::npos : name_end - 16);
      return;
    }
    std::vector<std::string> t = Tokens(line);
    if (t.empty()) {
      Finish();
      return;
    }
    uint64_t first = 0;
    if (t.size() >= 4 && ParseHex(t[0], &first) && (t[3] == "CIE" || t[3] == "FDE")) {
      Finish();
      StartEntry(t, first, line);
      return;
    }
    if (t[0] == "LOC") {
      columns_ = t;
      return;
    }
    if (kind_ != Kind::kNone && ParseHex(t[0], &first) && !columns_.empty()) Row(t, first);
  }

  ReadelfFrames Take() {
    Finish();
    return std::move(out_);
  }

 private:
  enum class Kind { kNone, kCie, kFde };

  void StartEntry(const std::vector<std::string>& t, uint64_t offset, const std::string& line) {
    columns_.clear();
    if (t[3] == "CIE") {
      kind_ = Kind::kCie;
      cie_key_ = {section_, offset};
      CieInfo& cie = cies_[cie_key_];
      const size_t q1 = line.find('"');
      const size_t q2 = q1 == std::string::npos ? q1 : line.find('"', q1 + 1);
      if (q2 != std::string::npos) cie.signal_frame = line.substr(q1 + 1, q2 - q1 - 1).find('S') != std::string::npos;
      return;
    }
    kind_ = Kind::kFde;
    fde_ = ReadelfFde{};
    fde_.section = section_;
    fde_.offset = offset;
    for (const std::string& tok : t) {
      if (tok.rfind("cie=", 0) == 0) {
        uint64_t cie_offset = 0;
        ParseHex(tok.substr(4), &cie_offset);
        fde_cie_ = {section_, cie_offset};
      } else if (tok.rfind("pc=", 0) == 0) {
        const size_t dots = tok.find("..");
        ParseHex(tok.substr(3, dots - 3), &fde_.begin);
        ParseHex(tok.substr(dots + 2), &fde_.end);
      }
    }
  }

  void Row(const std::vector<std::string>& t, uint64_t loc) {
    if (t.size() != columns_.size()) {
      ++out_.unparsed_rows;
      return;
    }
    ReadelfRow row;
    row.loc = loc;
    for (size_t i = 1; i < t.size(); ++i) {
      if (columns_[i] == "CFA") row.cfa = t[i];
      if (columns_[i] == "rbp") row.rbp = t[i];
      if (columns_[i] == "ra") row.ra = t[i];
    }
    if (kind_ == Kind::kCie) {
      CieInfo& cie = cies_[cie_key_];
      cie.has_row = true;
      cie.row = row;
      return;
    }
    if (!fde_.rows.empty() && fde_.rows.back().loc == loc) {
      fde_.rows.back() = row;
    } else {
      fde_.rows.push_back(row);
    }
  }

  void Finish() {
    if (kind_ == Kind::kFde) {
      auto it = cies_.find(fde_cie_);
      if (it != cies_.end()) {
        fde_.signal_frame = it->second.signal_frame;
        if (fde_.rows.empty() && it->second.has_row) {
          fde_.rows.push_back(it->second.row);
          fde_.rows.back().loc = fde_.begin;
        }
      }
      out_.fdes.push_back(std::move(fde_));
    }
    kind_ = Kind::kNone;
    columns_.clear();
  }

  std::string section_;
  Kind kind_ = Kind::kNone;
  std::vector<std::string> columns_;
  std::pair<std::string, uint64_t> cie_key_;
  std::pair<std::string, uint64_t> fde_cie_;
  std::map<std::pair<std::string, uint64_t>, CieInfo> cies_;
  ReadelfFde fde_;
  ReadelfFrames out_;
};

}  // namespace

StatusOr<std::string> RunCommand(const std::string& command) {
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return InternalError("popen " + command);
  std::string out;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  const int rc = ::pclose(pipe);
  // readelf exits with 1 after some warnings (it does for Debian's libc.so.6)
  // while printing everything; only no output at all is a failure.
  if (rc != 0 && out.empty()) return InternalError(command + " exited with " + std::to_string(rc));
  return out;
}

StatusOr<ReadelfFrames> ReadelfFrameTables(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, RunCommand("readelf --debug-dump=frames-interp '" + path + "' 2>/dev/null"));
  FramesParser parser;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) parser.Line(line);
  return parser.Take();
}

StatusOr<std::vector<ReadelfSection>> ReadelfSections(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, RunCommand("readelf -SW '" + path + "' 2>/dev/null"));
  std::vector<ReadelfSection> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    // "  [12] .plt              PROGBITS        0000000000001020 001020 000020 10  AX  0   0 16"
    const size_t close = line.find(']');
    if (line.find('[') == std::string::npos || close == std::string::npos) continue;
    std::vector<std::string> t = Tokens(line.substr(close + 1));
    if (t.size() < 5) continue;
    ReadelfSection s;
    s.name = t[0];
    if (!ParseHex(t[2], &s.addr) || !ParseHex(t[4], &s.size)) continue;
    out.push_back(s);
  }
  return out;
}

}  // namespace warpscope::testing
