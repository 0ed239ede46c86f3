#include "agent/symbolize/cubin_line_table.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <unordered_map>
#include <utility>

namespace warpscope {
namespace {

// DWARF constants (the subset a line program uses).
constexpr uint8_t kLnsCopy = 1;
constexpr uint8_t kLnsAdvancePc = 2;
constexpr uint8_t kLnsAdvanceLine = 3;
constexpr uint8_t kLnsSetFile = 4;
constexpr uint8_t kLnsConstAddPc = 8;
constexpr uint8_t kLnsFixedAdvancePc = 9;
constexpr uint8_t kLneEndSequence = 1;
constexpr uint8_t kLneSetAddress = 2;
constexpr uint8_t kLneDefineFile = 3;
constexpr uint8_t kLneNvInlinedCall = 0x90;

// Bound on the line register's magnitude (see RunProgram).
constexpr int64_t kMaxLine = int64_t{1} << 40;

constexpr uint64_t kLnctPath = 1;
constexpr uint64_t kLnctDirectoryIndex = 2;

constexpr uint64_t kFormBlock = 0x09;
constexpr uint64_t kFormBlock1 = 0x0a;
constexpr uint64_t kFormBlock2 = 0x03;
constexpr uint64_t kFormBlock4 = 0x04;
constexpr uint64_t kFormData1 = 0x0b;
constexpr uint64_t kFormData2 = 0x05;
constexpr uint64_t kFormData4 = 0x06;
constexpr uint64_t kFormData8 = 0x07;
constexpr uint64_t kFormData16 = 0x1e;
constexpr uint64_t kFormString = 0x08;
constexpr uint64_t kFormStrp = 0x0e;
constexpr uint64_t kFormLineStrp = 0x1f;
constexpr uint64_t kFormUdata = 0x0f;
constexpr uint64_t kFormSdata = 0x0d;

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// Little-endian reads inside [pos, end) of one buffer. A read past `end`
// sets failed() and yields zeros, so callers check once per step.
class ByteReader {
 public:
  ByteReader(std::string_view data, size_t pos, size_t end)
      : data_(data), pos_(pos), end_(std::min(end, data.size())) {}

  bool failed() const { return failed_; }
  bool at_end() const { return pos_ >= end_; }
  size_t pos() const { return pos_; }
  size_t end() const { return end_; }

  uint64_t Fixed(size_t n) {
    if (!Has(n)) return 0;
    uint64_t v = 0;
    for (size_t i = 0; i < n && i < 8; ++i) v |= uint64_t{static_cast<uint8_t>(data_[pos_ + i])} << (8 * i);
    pos_ += n;
    return v;
  }
  uint8_t U8() { return static_cast<uint8_t>(Fixed(1)); }

  uint64_t Uleb() {
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (!Has(1)) return 0;
      const uint8_t b = static_cast<uint8_t>(data_[pos_++]);
      if (shift < 64) v |= uint64_t{b & 0x7fu} << shift;
      if ((b & 0x80) == 0) return v;
    }
    failed_ = true;  // more than 10 bytes: not a 64-bit number
    return 0;
  }
  int64_t Sleb() {
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (!Has(1)) return 0;
      const uint8_t b = static_cast<uint8_t>(data_[pos_++]);
      if (shift < 64) v |= uint64_t{b & 0x7fu} << shift;
      if ((b & 0x80) == 0) {
        if (shift + 7 < 64 && (b & 0x40) != 0) v |= ~uint64_t{0} << (shift + 7);
        return static_cast<int64_t>(v);
      }
    }
    failed_ = true;
    return 0;
  }
  std::string_view CString() {
    if (at_end()) {
      failed_ = true;
      return {};
    }
    const void* nul = std::memchr(data_.data() + pos_, '\0', end_ - pos_);
    if (nul == nullptr) {
      failed_ = true;
      return {};
    }
    const size_t len = static_cast<const char*>(nul) - (data_.data() + pos_);
    std::string_view s = data_.substr(pos_, len);
    pos_ += len + 1;
    return s;
  }
  void Skip(uint64_t n) {
    if (Has(n)) pos_ += n;
  }
  void SetPos(size_t pos) {
    if (pos > end_) {
      failed_ = true;
      pos_ = end_;
    } else {
      pos_ = pos;
    }
  }

 private:
  bool Has(uint64_t n) {
    if (failed_ || n > end_ - pos_) {
      failed_ = true;
      return false;
    }
    return true;
  }

  std::string_view data_;
  size_t pos_;
  size_t end_;
  bool failed_ = false;
};

// A NUL-terminated string at `offset` of a string section; "" when out of range.
std::string_view StringAt(std::string_view section, uint64_t offset) {
  if (offset >= section.size()) return {};
  const char* begin = section.data() + offset;
  const void* nul = std::memchr(begin, '\0', section.size() - offset);
  const size_t len = nul == nullptr ? section.size() - offset : static_cast<const char*>(nul) - begin;
  return section.substr(offset, len);
}

std::string JoinPath(std::string_view dir, std::string_view name) {
  if (dir.empty() || (!name.empty() && name.front() == '/')) return std::string(name);
  std::string path(dir);
  if (path.back() != '/') path.push_back('/');
  path.append(name);
  return path;
}

// Builds one CubinLineTable across the units of .debug_line, interning
// paths and names so that rows hold small indexes.
class LineTableBuilder {
 public:
  explicit LineTableBuilder(const CubinLineTableInput& input) : in_(input) {}

  Status ParseUnit(size_t unit_offset, size_t* next_offset);
  CubinLineTable Finish() { return std::move(out_); }
  bool capped() const { return out_.rows_capped; }

 private:
  struct UnitHeader {
    int version = 0;
    int offset_size = 4;
    uint8_t min_inst_length = 1;
    int8_t line_base = 0;
    uint8_t line_range = 0;
    uint8_t opcode_base = 0;
    std::vector<uint8_t> standard_lengths;
    std::vector<std::string> dirs;
    std::vector<uint32_t> files;  // unit file number -> index in out_.files (kNone for none)
  };
  // A row already emitted in the current sequence, for 0x90 contexts.
  struct SequenceRow {
    uint32_t file;
    uint32_t line;
    uint32_t frame;
  };
  struct State {
    uint64_t address = 0;
    uint64_t file = 1;
    int64_t line = 1;
    uint64_t inline_context = 0;
    uint64_t inline_function = 0;
    bool has_section = false;
    uint32_t section = 0;
  };

  Status ReadV2Tables(ByteReader& r, UnitHeader& h);
  Status ReadV5Tables(ByteReader& r, UnitHeader& h);
  Status ReadV5Entries(ByteReader& r, const UnitHeader& h, bool files, std::vector<std::string>* paths,
                       std::vector<uint64_t>* dir_indexes);
  uint32_t AddFile(const UnitHeader& h, std::string_view name, uint64_t dir_index, bool v5);
  Status RunProgram(ByteReader& r, UnitHeader& h, size_t unit_offset);
  void EmitRow(const UnitHeader& h, const State& s, bool end);
  // Rows decoded so far, kept or not; decoding stops at max_rows, which
  // bounds the memory of rows, frames and sequence rows alike.
  bool Full() const { return rows_seen_ >= in_.max_rows; }
  uint32_t InternFile(std::string path);
  uint32_t InternFunction(uint64_t str_offset);

  const CubinLineTableInput& in_;
  CubinLineTable out_;
  std::unordered_map<std::string, uint32_t> file_index_;
  std::unordered_map<uint64_t, uint32_t> function_index_;
  std::vector<SequenceRow> sequence_rows_;
  std::map<std::pair<uint64_t, uint32_t>, uint32_t> sequence_frames_;  // (context, function) -> frame
  size_t rows_seen_ = 0;
};

uint32_t LineTableBuilder::InternFile(std::string path) {
  auto [it, inserted] = file_index_.try_emplace(std::move(path), static_cast<uint32_t>(out_.files.size()));
  if (inserted) out_.files.push_back(it->first);
  return it->second;
}

uint32_t LineTableBuilder::InternFunction(uint64_t str_offset) {
  auto [it, inserted] = function_index_.try_emplace(str_offset, static_cast<uint32_t>(out_.inlined_functions.size()));
  if (inserted) out_.inlined_functions.emplace_back(StringAt(in_.debug_str, str_offset));
  return it->second;
}

uint32_t LineTableBuilder::AddFile(const UnitHeader& h, std::string_view name, uint64_t dir_index, bool v5) {
  // Version 5 numbers directories from 0 (the compilation directory);
  // earlier versions from 1, with 0 the compilation directory, which a
  // -lineinfo cubin (no .debug_info) does not name.
  std::string_view dir;
  if (v5 && dir_index < h.dirs.size()) dir = h.dirs[dir_index];
  if (!v5 && dir_index >= 1 && dir_index <= h.dirs.size()) dir = h.dirs[dir_index - 1];
  return InternFile(JoinPath(dir, name));
}

Status LineTableBuilder::ReadV2Tables(ByteReader& r, UnitHeader& h) {
  for (;;) {
    std::string_view dir = r.CString();
    if (r.failed()) return DataLossError("include_directories run past the header");
    if (dir.empty()) break;
    h.dirs.emplace_back(dir);
  }
  h.files.push_back(CubinLineTable::kNone);  // file numbers start at 1
  for (;;) {
    std::string_view name = r.CString();
    if (r.failed()) return DataLossError("file_names run past the header");
    if (name.empty()) break;
    const uint64_t dir_index = r.Uleb();
    r.Uleb();  // modification time
    r.Uleb();  // length
    if (r.failed()) return DataLossError("file_names run past the header");
    h.files.push_back(AddFile(h, name, dir_index, /*v5=*/false));
  }
  return Status::Ok();
}

Status LineTableBuilder::ReadV5Entries(ByteReader& r, const UnitHeader& h, bool files, std::vector<std::string>* paths,
                                       std::vector<uint64_t>* dir_indexes) {
  const char* what = files ? "file_names" : "directories";
  const uint8_t format_count = r.U8();
  std::vector<std::pair<uint64_t, uint64_t>> formats;  // (content type, form)
  for (uint8_t i = 0; i < format_count; ++i) {
    const uint64_t type = r.Uleb();
    const uint64_t form = r.Uleb();
    formats.emplace_back(type, form);
  }
  const uint64_t count = r.Uleb();
  if (r.failed()) return DataLossError(std::string(what) + " format runs past the header");
  const bool has_path = std::any_of(formats.begin(), formats.end(), [](const auto& f) { return f.first == kLnctPath; });
  if (count > 0 && !has_path) return DataLossError(std::string(what) + " have no path");
  // With a path, every entry takes at least one byte: a count beyond the
  // header's remaining bytes cannot be right, and refusing it bounds the loop.
  if (count > r.end() - r.pos()) {
    return DataLossError(std::string(what) + " count " + std::to_string(count) + " exceeds the header");
  }
  for (uint64_t e = 0; e < count; ++e) {
    std::string_view path;
    uint64_t dir_index = 0;
    for (const auto& [type, form] : formats) {
      std::string_view str;
      uint64_t value = 0;
      switch (form) {
        case kFormString:
          str = r.CString();
          break;
        case kFormLineStrp:
          str = StringAt(in_.debug_line_str, r.Fixed(h.offset_size));
          break;
        case kFormStrp:
          str = StringAt(in_.debug_str, r.Fixed(h.offset_size));
          break;
        case kFormUdata:
          value = r.Uleb();
          break;
        case kFormSdata:
          value = static_cast<uint64_t>(r.Sleb());
          break;
        case kFormData1:
          value = r.Fixed(1);
          break;
        case kFormData2:
          value = r.Fixed(2);
          break;
        case kFormData4:
          value = r.Fixed(4);
          break;
        case kFormData8:
          value = r.Fixed(8);
          break;
        case kFormData16:
          r.Skip(16);
          break;
        case kFormBlock:
          r.Skip(r.Uleb());
          break;
        case kFormBlock1:
          r.Skip(r.Fixed(1));
          break;
        case kFormBlock2:
          r.Skip(r.Fixed(2));
          break;
        case kFormBlock4:
          r.Skip(r.Fixed(4));
          break;
        default:
          return DataLossError(std::string(what) + " use form " + Hex(form) + ", which a line table cannot hold");
      }
      if (type == kLnctPath) path = str;
      if (type == kLnctDirectoryIndex) dir_index = value;
    }
    if (r.failed()) return DataLossError(std::string(what) + " run past the header");
    paths->emplace_back(path);
    if (dir_indexes != nullptr) dir_indexes->push_back(dir_index);
  }
  return Status::Ok();
}

Status LineTableBuilder::ReadV5Tables(ByteReader& r, UnitHeader& h) {
  RETURN_IF_ERROR(ReadV5Entries(r, h, /*files=*/false, &h.dirs, nullptr));
  std::vector<std::string> names;
  std::vector<uint64_t> dir_indexes;
  RETURN_IF_ERROR(ReadV5Entries(r, h, /*files=*/true, &names, &dir_indexes));
  for (size_t i = 0; i < names.size(); ++i) h.files.push_back(AddFile(h, names[i], dir_indexes[i], /*v5=*/true));
  return Status::Ok();
}

void LineTableBuilder::EmitRow(const UnitHeader& h, const State& s, bool end) {
  const uint32_t file = s.file < h.files.size() ? h.files[s.file] : InternFile("");
  const uint32_t line = s.line > 0 && s.line <= int64_t{UINT32_MAX} ? static_cast<uint32_t>(s.line) : 0;
  uint32_t frame = CubinLineTable::kNone;
  // Context N names the Nth row of this sequence, which must come before
  // this one; anything else is ignored (the row counts as not inlined).
  if (!end && s.inline_context != 0 && s.inline_context <= sequence_rows_.size()) {
    const uint32_t function = InternFunction(s.inline_function);
    auto [it, inserted] = sequence_frames_.try_emplace({s.inline_context, function}, 0);
    if (inserted) {
      const SequenceRow& call = sequence_rows_[s.inline_context - 1];
      it->second = static_cast<uint32_t>(out_.frames.size());
      out_.frames.push_back({function, call.file, call.line, call.frame});
    }
    frame = it->second;
  }
  sequence_rows_.push_back({file, line, frame});
  ++rows_seen_;
  if (s.has_section) out_.rows.push_back({s.address, s.section, end ? CubinLineTable::kNone : file, line, frame});
}

Status LineTableBuilder::RunProgram(ByteReader& r, UnitHeader& h, size_t unit_offset) {
  State s;
  sequence_rows_.clear();
  sequence_frames_.clear();
  while (!r.at_end()) {
    if (Full()) {
      out_.rows_capped = true;
      return Status::Ok();
    }
    const uint8_t op = r.U8();
    if (op >= h.opcode_base) {
      const unsigned adjusted = op - h.opcode_base;
      s.address += uint64_t{adjusted / h.line_range} * h.min_inst_length;
      s.line += h.line_base + static_cast<int>(adjusted % h.line_range);
      EmitRow(h, s, /*end=*/false);
      continue;
    }
    switch (op) {
      case 0: {  // extended: ULEB length, sub-opcode, operands
        const uint64_t len = r.Uleb();
        const size_t start = r.pos();
        if (r.failed() || len > r.end() - start) {
          return DataLossError("extended opcode at " + Hex(start) + " runs past its unit");
        }
        if (len == 0) break;
        const uint8_t sub = r.U8();
        if (sub == kLneEndSequence) {
          EmitRow(h, s, /*end=*/true);
          ++out_.sequences;
          if (!s.has_section && !sequence_rows_.empty()) ++out_.sequences_dropped;
          s = State();
          sequence_rows_.clear();
          sequence_frames_.clear();
        } else if (sub == kLneSetAddress) {
          const uint64_t operand_offset = r.pos();
          const uint64_t raw = r.Fixed(std::min<uint64_t>(len - 1, 8));
          auto it = std::lower_bound(
              in_.relocations.begin(), in_.relocations.end(), operand_offset,
              [](const CubinLineRelocation& rel, uint64_t offset) { return rel.operand_offset < offset; });
          if (it != in_.relocations.end() && it->operand_offset == operand_offset) {
            s.has_section = true;
            s.section = it->target.section;
            s.address = it->target.offset;
          } else if (in_.unrelocated_section != CubinLineTableInput::kNoSection) {
            s.has_section = true;
            s.section = in_.unrelocated_section;
            s.address = raw;
          } else {
            s.has_section = false;
            s.address = raw;
          }
        } else if (sub == kLneDefineFile && h.version <= 4) {
          std::string_view name = r.CString();
          const uint64_t dir_index = r.Uleb();
          if (!r.failed()) h.files.push_back(AddFile(h, name, dir_index, /*v5=*/false));
        } else if (sub == kLneNvInlinedCall) {
          s.inline_context = r.Uleb();
          s.inline_function = r.Uleb();
        }
        r.SetPos(start + len);
        break;
      }
      case kLnsCopy:
        EmitRow(h, s, /*end=*/false);
        break;
      case kLnsAdvancePc:
        s.address += r.Uleb() * h.min_inst_length;
        break;
      case kLnsAdvanceLine:
        s.line += std::clamp<int64_t>(r.Sleb(), -kMaxLine, kMaxLine);
        break;
      case kLnsSetFile:
        s.file = r.Uleb();
        break;
      case kLnsConstAddPc:
        s.address += uint64_t{(255u - h.opcode_base) / h.line_range} * h.min_inst_length;
        break;
      case kLnsFixedAdvancePc:
        s.address += r.Fixed(2);
        break;
      default:
        // Standard opcodes without effect on rows (set_column, negate_stmt,
        // prologue_end, set_isa, ...) and unknown ones: skip their ULEB
        // operands as the header counts them.
        for (uint8_t i = 0; i < h.standard_lengths[op - 1]; ++i) r.Uleb();
        break;
    }
    if (r.failed()) return DataLossError("opcode " + Hex(op) + " runs past the unit at " + Hex(unit_offset));
    // A corrupted program can change the line any number of times; clamping
    // keeps the register far from overflow.
    s.line = std::clamp<int64_t>(s.line, -kMaxLine, kMaxLine);
  }
  return Status::Ok();
}

Status LineTableBuilder::ParseUnit(size_t unit_offset, size_t* next_offset) {
  const std::string_view data = in_.debug_line;
  auto error = [&](const Status& s) { return s.WithContext("line table unit at " + Hex(unit_offset)); };
  ByteReader r(data, unit_offset, data.size());
  UnitHeader h;
  uint64_t length = r.Fixed(4);
  if (length == 0xffffffff) {
    h.offset_size = 8;
    length = r.Fixed(8);
  } else if (length >= 0xfffffff0) {
    return error(DataLossError("reserved unit length " + Hex(length)));
  }
  if (r.failed() || length > data.size() - r.pos()) {
    return error(DataLossError("unit of " + std::to_string(length) + " bytes runs past the section"));
  }
  const size_t unit_end = r.pos() + length;
  *next_offset = unit_end;
  ByteReader u(data, r.pos(), unit_end);
  h.version = static_cast<int>(u.Fixed(2));
  if (u.failed()) return error(DataLossError("unit too short for a header"));
  if (h.version < 2 || h.version > 5) {
    return error(InvalidArgumentError("DWARF line table version " + std::to_string(h.version) + " (2 to 5 are read)"));
  }
  if (h.version >= 5) {
    u.U8();  // address_size: set_address operands carry their own length
    u.U8();  // segment_selector_size
  }
  const uint64_t header_length = u.Fixed(h.offset_size);
  if (u.failed() || header_length > unit_end - u.pos()) return error(DataLossError("header runs past the unit"));
  const size_t program_start = u.pos() + header_length;
  ByteReader hr(data, u.pos(), program_start);
  h.min_inst_length = hr.U8();
  if (h.version >= 4) hr.U8();  // maximum_operations_per_instruction: 1 for every GPU
  hr.U8();                      // default_is_stmt
  h.line_base = static_cast<int8_t>(hr.U8());
  h.line_range = hr.U8();
  h.opcode_base = hr.U8();
  if (hr.failed()) return error(DataLossError("header runs past the unit"));
  if (h.line_range == 0) return error(DataLossError("line_range 0"));
  if (h.opcode_base == 0) return error(DataLossError("opcode_base 0"));
  for (int i = 1; i < h.opcode_base; ++i) h.standard_lengths.push_back(hr.U8());
  if (hr.failed()) return error(DataLossError("standard_opcode_lengths run past the header"));
  Status tables = h.version >= 5 ? ReadV5Tables(hr, h) : ReadV2Tables(hr, h);
  if (!tables.ok()) return error(tables);
  ByteReader program(data, program_start, unit_end);
  Status run = RunProgram(program, h, unit_offset);
  if (!run.ok()) return error(run);
  return Status::Ok();
}

bool AllZero(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c == '\0'; });
}

bool StartsWithZeroLength(std::string_view s) { return s.size() >= 4 && AllZero(s.substr(0, 4)); }

}  // namespace

StatusOr<CubinLineTable> ParseCubinLineTable(const CubinLineTableInput& input) {
  LineTableBuilder builder(input);
  size_t offset = 0;
  while (offset < input.debug_line.size() && !builder.capped()) {
    // Zero padding may follow the last unit; a zero length elsewhere is an error.
    const std::string_view rest = input.debug_line.substr(offset);
    if (StartsWithZeroLength(rest) && AllZero(rest)) break;
    size_t next = offset;
    RETURN_IF_ERROR(builder.ParseUnit(offset, &next));
    offset = next;  // ParseUnit only succeeds on a unit of at least a header, so this advances
  }
  return builder.Finish();
}

}  // namespace warpscope
