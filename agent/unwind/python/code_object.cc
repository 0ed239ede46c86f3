#include "agent/unwind/python/code_object.h"

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <limits>

#include "base/file_util.h"
#include "bpf/intf/python.h"

namespace warpscope {
namespace {

// Code-object names and file names longer than this are treated as corrupt
// rather than copied: real ones are far shorter (PATH_MAX is 4096 bytes).
constexpr size_t kMaxNameChars = 4096;
// Header offsets above this mean a broken layout, not a bigger object.
constexpr uint32_t kMaxHeaderSpan = 512;
// Bytes read past a str or bytes header in the same read, for its payload.
constexpr size_t kReadAhead = 192;

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
  return buf;
}

std::string RangeText(uint32_t pid, uint64_t addr, size_t len) {
  return std::to_string(len) + " bytes at " + Hex(addr) + " of process " + std::to_string(pid);
}

// Maps a failed read to the status callers act on: an exited process is
// NotFound (drop the process), an unmapped range is DataLoss (drop the frame).
Status ReadError(uint32_t pid, uint64_t addr, size_t len, int err) {
  if (err == ESRCH || err == ENOENT) return NotFoundError("process " + std::to_string(pid) + " has exited");
  if (err == EFAULT || err == EIO) return DataLossError(RangeText(pid, addr, len) + " are not mapped");
  return ErrnoError(err, "reading " + RangeText(pid, addr, len));
}

// /proc/PID/mem is opened per read: the fallback is rare, and holding no fd
// keeps the reader stateless (safe to copy and to call from any thread).
Status ReadProcMem(uint32_t pid, uint64_t addr, void* out, size_t len) {
  const std::string path = "/proc/" + std::to_string(pid) + "/mem";
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ReadError(pid, addr, len, errno);
  // Offsets are off_t; nothing user space can map lies above INT64_MAX.
  if (addr > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) - len) {
    return ReadError(pid, addr, len, EIO);
  }
  const ssize_t n = PreadFully(fd.get(), out, len, addr);
  if (n < 0) return ReadError(pid, addr, len, errno);
  // A zombie has no address space left: its mem file reads as empty.
  if (static_cast<size_t>(n) < len) return ReadError(pid, addr, len, ESRCH);
  return Status::Ok();
}

Status ReadProcessMemory(uint32_t pid, uint64_t addr, void* out, size_t len) {
  if (len == 0) return Status::Ok();
  iovec local{out, len};
  iovec remote{reinterpret_cast<void*>(static_cast<uintptr_t>(addr)), len};
  const ssize_t n = ::process_vm_readv(static_cast<pid_t>(pid), &local, 1, &remote, 1, 0);
  if (n == static_cast<ssize_t>(len)) return Status::Ok();
  if (n >= 0) return ReadError(pid, addr, len, EFAULT);  // a partial read stops at an unmapped page
  const int err = errno;
  if (err == EPERM || err == ENOSYS) return ReadProcMem(pid, addr, out, len);
  return ReadError(pid, addr, len, err);
}

template <typename T>
T Load(const std::string& buf, size_t offset) {
  T v;
  std::memcpy(&v, buf.data() + offset, sizeof(T));
  return v;
}


StatusOr<std::string> DecodeCodePoints(const std::string& raw, uint32_t kind) {
  std::string out;
  out.reserve(raw.size());
  for (size_t i = 0; i + kind <= raw.size(); i += kind) {
    uint32_t cp = 0;
    if (kind == 1) cp = static_cast<uint8_t>(raw[i]);
    if (kind == 2) cp = Load<uint16_t>(raw, i);
    if (kind == 4) cp = Load<uint32_t>(raw, i);
    if (!AppendUtf8(cp, &out)) return DataLossError("str holds code point " + Hex(cp) + ", past U+10FFFF");
  }
  return out;
}

// A PyObject* field: null, misaligned or kernel-half values mean the code
// object was freed or the address never held one.
Status CheckObjectPointer(uint64_t p, const char* field) {
  if (p == 0 || p % 8 != 0 || p > WS_PY_ADDR_MASK) {
    return DataLossError(std::string(field) + " is not an object pointer: " + Hex(p));
  }
  return Status::Ok();
}

StatusOr<std::string> ReadStringField(const ReadMemoryFn& read, const PythonObjectLayout& layout, uint64_t p,
                                      const char* field) {
  RETURN_IF_ERROR(CheckObjectPointer(p, field));
  StatusOr<std::string> s = ReadPythonString(read, layout, p, kMaxNameChars);
  if (!s.ok()) return s.status().WithContext(field);
  return s;
}

// ---- Line tables -----------------------------------------------------------
// Both walks mirror CPython's own (Objects/codeobject.c of 3.10 and 3.11+)
// step for step, so that a line we report is the line a traceback would show;
// the only departures are bounds checks where CPython trusts its own tables.

// Line numbers are accumulated in 64 bits so that corrupt deltas cannot
// overflow; anything negative (CPython's -1, "no line") or too large falls
// back to the function's first line.
int32_t LineOrFirst(int64_t line, int32_t firstlineno) {
  if (line < 0 || line > std::numeric_limits<int32_t>::max()) return firstlineno;
  return static_cast<int32_t>(line);
}

// 3.10: (unsigned byte address delta, signed byte line delta) pairs; a line
// delta of -128 marks a range without a line. Zero-width ranges still move
// the computed line but never match (PyLineTable_NextAddressRange skips them).
int32_t LineFromLnotab310(std::string_view t, int32_t firstlineno, uint32_t instr_index) {
  const uint64_t target = uint64_t{2} * instr_index;  // 3.10 ranges are in bytes
  int64_t computed_line = firstlineno;
  uint64_t end = 0;
  for (size_t i = 0; i + 1 < t.size(); i += 2) {
    const uint64_t start = end;
    end += static_cast<uint8_t>(t[i]);
    const int8_t line_delta = static_cast<int8_t>(t[i + 1]);
    int64_t line = -1;
    if (line_delta != -128) {
      computed_line += line_delta;
      line = computed_line;
    }
    if (start != end && target < end) return LineOrFirst(line, firstlineno);
  }
  return firstlineno;
}

// Unsigned varint of the 3.11+ location table: 6-bit chunks, least
// significant first, 0x40 set on every chunk but the last. Stops at the
// table's end; chunks past 32 bits are dropped.
uint32_t ScanVarint(std::string_view t, size_t pos) {
  uint32_t value = 0;
  for (unsigned shift = 0; pos < t.size(); shift += 6) {
    const uint8_t b = static_cast<uint8_t>(t[pos++]);
    if (shift < 32) value |= static_cast<uint32_t>(b & 63) << shift;
    if ((b & 64) == 0) break;
  }
  return value;
}

int64_t ScanSignedVarint(std::string_view t, size_t pos) {
  const uint32_t v = ScanVarint(t, pos);
  return (v & 1) ? -static_cast<int64_t>(v >> 1) : static_cast<int64_t>(v >> 1);
}

// Line delta of the entry whose first byte is at pos (get_line_delta()).
int64_t LocationLineDelta(std::string_view t, size_t pos) {
  switch ((static_cast<uint8_t>(t[pos]) >> 3) & 15) {
    case 13:  // PY_CODE_LOCATION_INFO_NO_COLUMNS
    case 14:  // PY_CODE_LOCATION_INFO_LONG
      return ScanSignedVarint(t, pos + 1);
    case 11: return 1;  // ONE_LINE1
    case 12: return 2;  // ONE_LINE2
    default: return 0;  // SHORT0-9, ONE_LINE0, NONE (15)
  }
}

// 3.11+ (Objects/locations.md): each entry opens with a byte with bit 7 set
// and covers (byte & 7) + 1 code units. Like CPython's advance(), the next
// entry is the next byte with bit 7 set, so entry payloads need no parsing
// beyond the line delta.
int32_t LineFromLocations311(std::string_view t, int32_t firstlineno, uint32_t instr_index) {
  int64_t computed_line = firstlineno;
  uint64_t end = 0;  // in code units
  size_t pos = 0;
  while (pos < t.size()) {
    const uint8_t first = static_cast<uint8_t>(t[pos]);
    computed_line += LocationLineDelta(t, pos);
    const bool no_line = (first >> 3) == 0x1f;  // is_no_line_marker()
    end += (first & 7) + 1;
    do {
      ++pos;
    } while (pos < t.size() && (static_cast<uint8_t>(t[pos]) & 0x80) == 0);
    if (instr_index < end) return no_line ? firstlineno : LineOrFirst(computed_line, firstlineno);
  }
  return firstlineno;
}

}  // namespace

// Appends code point cp as UTF-8. Lone surrogates (a str can hold them, UTF-8
// cannot) become U+FFFD; values past U+10FFFF cannot be in a real str.
bool AppendUtf8(uint32_t cp, std::string* out) {
  if (cp > 0x10FFFF) return false;
  if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD;
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
  return true;
}

ReadMemoryFn ProcessMemoryReader(uint32_t pid) {
  return [pid](uint64_t addr, void* out, size_t len) { return ReadProcessMemory(pid, addr, out, len); };
}

StatusOr<std::string> ReadPythonString(const ReadMemoryFn& read, const PythonObjectLayout& layout, uint64_t addr,
                                       size_t max_chars) {
  if (addr == 0) return InvalidArgumentError("null str pointer");
  if (layout.ascii_data == 0 || layout.compact_data == 0) {
    return FailedPreconditionError("the layout has no str data offsets");
  }
  const uint32_t span = std::max(layout.str_length + 8, layout.str_state + 4);
  if (span > kMaxHeaderSpan) return FailedPreconditionError("str header offsets are out of range");
  // Names are short and follow their header: one read usually brings both. A
  // read past the object that reaches an unmapped page fails, and the header
  // is then read alone.
  std::string header(std::max<size_t>(span, std::max(layout.ascii_data, layout.compact_data) + kReadAhead), '\0');
  if (!read(addr, header.data(), header.size()).ok()) {
    header.resize(span);
    RETURN_IF_ERROR(read(addr, header.data(), header.size()).WithContext("str at " + Hex(addr)));
  }
  const int64_t length = Load<int64_t>(header, layout.str_length);
  const uint32_t state = Load<uint32_t>(header, layout.str_state);
  if (length < 0) return DataLossError("str at " + Hex(addr) + " has negative length " + std::to_string(length));
  if (static_cast<uint64_t>(length) > max_chars) {
    return ResourceExhaustedError("str at " + Hex(addr) + " has " + std::to_string(length) +
                                  " code points, over the limit of " + std::to_string(max_chars));
  }
  const uint32_t kind = (state >> 2) & 7;
  const bool compact = (state >> 5) & 1;
  const bool ascii = (state >> 6) & 1;
  if (!compact) return FailedPreconditionError("str at " + Hex(addr) + " is not compact (unsupported)");
  if (kind != 1 && kind != 2 && kind != 4) {
    return DataLossError("str at " + Hex(addr) + " has invalid kind " + std::to_string(kind));
  }
  if (ascii && kind != 1) return DataLossError("ASCII str at " + Hex(addr) + " has kind " + std::to_string(kind));
  const uint32_t data_offset = ascii ? layout.ascii_data : layout.compact_data;
  const size_t raw_size = static_cast<size_t>(length) * kind;
  std::string raw;
  if (raw_size == 0) {
    // the empty str: nothing to read
  } else if (data_offset + raw_size <= header.size()) {
    raw = header.substr(data_offset, raw_size);
  } else {
    raw.assign(raw_size, '\0');
    const uint64_t data = addr + data_offset;
    RETURN_IF_ERROR(read(data, raw.data(), raw.size()).WithContext("str data at " + Hex(data)));
  }
  if (ascii) {
    const bool clean = std::all_of(raw.begin(), raw.end(), [](char c) { return (c & 0x80) == 0; });
    if (!clean) return DataLossError("ASCII str at " + Hex(addr) + " holds non-ASCII bytes");
    return raw;
  }
  return DecodeCodePoints(raw, kind);
}

StatusOr<std::string> ReadPythonBytes(const ReadMemoryFn& read, const PythonObjectLayout& layout, uint64_t addr,
                                      size_t max_len) {
  if (addr == 0) return InvalidArgumentError("null bytes pointer");
  // As for str: the size and a short payload in one read when it can be.
  std::string head(std::max<size_t>(layout.bytes_size + sizeof(int64_t), layout.bytes_data + kReadAhead), '\0');
  if (!read(addr, head.data(), head.size()).ok()) {
    head.resize(layout.bytes_size + sizeof(int64_t));
    RETURN_IF_ERROR(read(addr, head.data(), head.size()).WithContext("bytes at " + Hex(addr)));
  }
  const int64_t size = Load<int64_t>(head, layout.bytes_size);
  if (size < 0) return DataLossError("bytes at " + Hex(addr) + " has negative size " + std::to_string(size));
  if (static_cast<uint64_t>(size) > max_len) {
    return ResourceExhaustedError("bytes at " + Hex(addr) + " has " + std::to_string(size) +
                                  " bytes, over the limit of " + std::to_string(max_len));
  }
  if (size == 0) return std::string();
  if (layout.bytes_data + static_cast<size_t>(size) <= head.size()) {
    return head.substr(layout.bytes_data, static_cast<size_t>(size));
  }
  std::string out(static_cast<size_t>(size), '\0');
  RETURN_IF_ERROR(read(addr + layout.bytes_data, out.data(), out.size()).WithContext("bytes data at " + Hex(addr)));
  return out;
}

StatusOr<PythonCodeInfo> ReadCodeObject(const ReadMemoryFn& read, const PythonLayout& layout, uint64_t code_addr) {
  const std::string context = "code object at " + Hex(code_addr);
  Status pointer_ok = CheckObjectPointer(code_addr, "code object address");
  if (!pointer_ok.ok()) return pointer_ok;
  const PythonCodeLayout& c = layout.code;
  const bool has_qualname = c.qualname >= 0;
  // One read covers every field: they all sit in the fixed-size head.
  uint32_t span = std::max({c.argcount + 4, c.flags + 4, c.firstlineno + 4, c.name + 8, c.filename + 8,
                            c.linetable + 8});
  if (has_qualname) span = std::max(span, static_cast<uint32_t>(c.qualname) + 8);
  if (span > kMaxHeaderSpan) return FailedPreconditionError("code object offsets are out of range");
  std::string head(span, '\0');
  RETURN_IF_ERROR(read(code_addr, head.data(), head.size()).WithContext(context));

  const int32_t argcount = Load<int32_t>(head, c.argcount);
  const int32_t flags = Load<int32_t>(head, c.flags);
  const int32_t firstlineno = Load<int32_t>(head, c.firstlineno);
  if (firstlineno < 0 || argcount < 0) {
    return DataLossError(context + " has co_firstlineno " + std::to_string(firstlineno) + ", co_argcount " +
                         std::to_string(argcount));
  }
  PythonCodeInfo info;
  info.firstlineno = firstlineno;
  info.fingerprint = ws_py_fingerprint(static_cast<uint32_t>(argcount), static_cast<uint32_t>(flags),
                                       static_cast<uint32_t>(firstlineno));
  info.linetable_format = c.linetable_format;

  const uint64_t name_ptr = Load<uint64_t>(head, has_qualname ? static_cast<uint32_t>(c.qualname) : c.name);
  StatusOr<std::string> name =
      ReadStringField(read, layout.object, name_ptr, has_qualname ? "co_qualname" : "co_name");
  if (!name.ok()) return name.status().WithContext(context);
  info.name = std::move(name).value();

  StatusOr<std::string> filename =
      ReadStringField(read, layout.object, Load<uint64_t>(head, c.filename), "co_filename");
  if (!filename.ok()) return filename.status().WithContext(context);
  info.filename = std::move(filename).value();

  const uint64_t table_ptr = Load<uint64_t>(head, c.linetable);
  Status table_ptr_ok = CheckObjectPointer(table_ptr, "co_linetable");
  if (!table_ptr_ok.ok()) return table_ptr_ok.WithContext(context);
  StatusOr<std::string> table = ReadPythonBytes(read, layout.object, table_ptr);
  if (!table.ok()) return table.status().WithContext(context + ": co_linetable");
  info.linetable = std::move(table).value();
  return info;
}

int32_t PythonLineForInstruction(PythonLineTableFormat format, std::string_view linetable, int32_t firstlineno,
                                 uint32_t instr_index) {
  if (format == PythonLineTableFormat::kLnotab310) return LineFromLnotab310(linetable, firstlineno, instr_index);
  return LineFromLocations311(linetable, firstlineno, instr_index);
}

}  // namespace warpscope
