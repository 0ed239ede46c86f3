// ReadCodeObject and friends against live interpreters (the code objects a
// real CPython built, read out of its memory while it waits), plus the error
// paths: corrupt objects in a fake memory, unmapped addresses, exited
// processes, and the /proc/PID/mem fallback under a seccomp filter.
#include "agent/unwind/python/code_object.h"

#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <iostream>
#include <map>
#include <sstream>

#include "tests/support/python_interpreters.h"

namespace warpscope {
namespace {

using testing::TestPython;

// Non-ASCII names of every str kind: Latin-1 (grüße, méthode), UCS-2 (日本)
// and UCS-4 (U+20000, and the emoji in the file name). Prints one JSON line
// per object, then blocks so the test can read its memory.
constexpr char kLiveScript[] = R"PY(
import json, sys

def outer(a, b=2, *rest, key=None, **kw):
    def grüße(x, y):
        total = 0
        for i in range(x):
            total += (i *
                      y)
        return total
    return grüße

class Klass:
    def méthode(self, n):
        while n > 0:
            n -= 1
        return n

def 日本(): return 1

def 𠀀(*args):
    yield args

class S(str):
    pass

STR = "naïve 日本 😀"
BYTES = b"\x00\x01bytes\xff"
NONCOMPACT = S("subclass")

def emit(**kw):
    print(json.dumps(kw, ensure_ascii=False), flush=True)

for fn in (outer(1), Klass.méthode, outer, 日本, 𠀀):
    c = fn.__code__
    lines = " ".join("%d:%d:%s" % (s, e, "N" if l is None else l) for s, e, l in c.co_lines())
    emit(kind="code", addr=id(c), name=c.co_name, qualname=fn.__qualname__, filename=c.co_filename,
         firstlineno=c.co_firstlineno, argcount=c.co_argcount, flags=c.co_flags,
         linetable=bytes(c.co_linetable).hex(), lines=lines)
emit(kind="str", addr=id(STR), value=STR)
emit(kind="bytes", addr=id(BYTES), hex=BYTES.hex())
emit(kind="noncompact", addr=id(NONCOMPACT))
emit(kind="ready")
sys.stdin.read()
)PY";

uint64_t ToU64(const std::string& s) { return std::stoull(s); }

// Checks the line of every code unit co_lines() names, using the table read
// out of the process.
void ExpectLinesAgree(const PythonCodeInfo& info, const std::string& lines) {
  std::istringstream in(lines);
  for (std::string range; in >> range;) {
    unsigned start = 0, end = 0;
    char line[16] = {};
    ASSERT_EQ(std::sscanf(range.c_str(), "%u:%u:%15s", &start, &end, line), 3) << range;
    const int32_t want = std::string(line) == "N" ? info.firstlineno : std::stoi(line);
    for (uint32_t idx = start / 2; idx < end / 2; ++idx) {
      EXPECT_EQ(PythonLineForInstruction(info.linetable_format, info.linetable, info.firstlineno, idx), want)
          << info.name << " unit " << idx;
    }
  }
}

TEST(PythonCodeObjectTest, ReadsLiveCodeObjectsOfEveryInterpreter) {
  StatusOr<std::vector<TestPython>> pythons = testing::FindTestPythons();
  ASSERT_TRUE(pythons.ok()) << pythons.status().ToString();
  testing::TempDir dir;
  StatusOr<std::string> script = dir.WriteFile("prüfung_日本_😀.py", kLiveScript);
  ASSERT_TRUE(script.ok());
  std::vector<std::string> exercised;
  for (const TestPython& py : *pythons) {
    SCOPED_TRACE(testing::Describe(py));
    const PythonLayout* layout = FindPythonLayout(py.version);
    if (layout == nullptr) {
      std::cout << "[ python   ] no layout for " << testing::Describe(py) << " (supported: "
                << SupportedPythonVersions() << "), skipping\n";
      continue;
    }
    StatusOr<std::unique_ptr<testing::ChildProcess>> child = testing::ChildProcess::Start({py.path, *script});
    ASSERT_TRUE(child.ok()) << child.status().ToString();
    const ReadMemoryFn read = ProcessMemoryReader(static_cast<uint32_t>((*child)->pid()));
    int codes = 0;
    uint64_t a_code_addr = 0;
    while (true) {
      StatusOr<std::string> line = (*child)->ReadLine(30000);
      ASSERT_TRUE(line.ok()) << line.status().ToString();
      StatusOr<std::map<std::string, std::string>> json = testing::ParseFlatJson(*line);
      ASSERT_TRUE(json.ok()) << json.status().ToString();
      std::map<std::string, std::string>& rec = *json;
      const std::string& kind = rec["kind"];
      if (kind == "ready") break;
      const uint64_t addr = ToU64(rec["addr"]);
      if (kind == "str") {
        StatusOr<std::string> s = ReadPythonString(read, layout->object, addr);
        ASSERT_TRUE(s.ok()) << s.status().ToString();
        EXPECT_EQ(*s, rec["value"]);
      } else if (kind == "bytes") {
        StatusOr<std::string> b = ReadPythonBytes(read, layout->object, addr);
        ASSERT_TRUE(b.ok()) << b.status().ToString();
        EXPECT_EQ(*b, *testing::FromHex(rec["hex"]));
      } else if (kind == "noncompact") {
        // A str subclass instance keeps its characters out of line.
        EXPECT_EQ(ReadPythonString(read, layout->object, addr).status().code(), StatusCode::kFailedPrecondition);
      } else {
        ASSERT_EQ(kind, "code");
        StatusOr<PythonCodeInfo> info = ReadCodeObject(read, *layout, addr);
        ASSERT_TRUE(info.ok()) << rec["qualname"] << ": " << info.status().ToString();
        const int32_t firstlineno = std::stoi(rec["firstlineno"]);
        EXPECT_EQ(info->name, py.version.minor >= 11 ? rec["qualname"] : rec["name"]);
        EXPECT_EQ(info->filename, rec["filename"]);
        EXPECT_EQ(info->firstlineno, firstlineno);
        EXPECT_EQ(info->fingerprint, ws_py_fingerprint(static_cast<uint32_t>(std::stoi(rec["argcount"])),
                                                       static_cast<uint32_t>(std::stoi(rec["flags"])),
                                                       static_cast<uint32_t>(firstlineno)));
        EXPECT_EQ(info->linetable, *testing::FromHex(rec["linetable"]));
        EXPECT_EQ(info->linetable_format, layout->code.linetable_format);
        ExpectLinesAgree(*info, rec["lines"]);
        a_code_addr = addr;
        ++codes;
      }
    }
    EXPECT_EQ(codes, 5);
    // Once the process is gone, the same read is an ordinary NotFound.
    const pid_t pid = (*child)->pid();
    child.value().reset();
    EXPECT_EQ(ReadCodeObject(ProcessMemoryReader(static_cast<uint32_t>(pid)), *layout, a_code_addr).status().code(),
              StatusCode::kNotFound);
    exercised.push_back(testing::Describe(py));
  }
  ASSERT_FALSE(exercised.empty());
  for (const std::string& e : exercised) std::cout << "[ python   ] live code objects read from " << e << "\n";
}

// Object images at chosen addresses; reads outside them fail like unmapped memory.
class FakeMemory {
 public:
  void Put(uint64_t addr, std::string bytes) { regions_[addr] = std::move(bytes); }
  ReadMemoryFn Reader() const {
    return [this](uint64_t addr, void* out, size_t len) -> Status {
      auto it = regions_.upper_bound(addr);
      if (it == regions_.begin()) return DataLossError("unmapped");
      --it;
      if (addr + len > it->first + it->second.size()) return DataLossError("unmapped");
      std::memcpy(out, it->second.data() + (addr - it->first), len);
      return Status::Ok();
    };
  }

 private:
  std::map<uint64_t, std::string> regions_;
};

template <typename T>
void Store(std::string* image, size_t offset, T v) {
  if (image->size() < offset + sizeof(T)) image->resize(offset + sizeof(T));
  std::memcpy(image->data() + offset, &v, sizeof(T));
}

constexpr uint32_t kCompact = 1u << 5, kAscii = 1u << 6;
uint32_t Kind(uint32_t k) { return k << 2; }

std::string StrImage(const PythonObjectLayout& l, int64_t length, uint32_t state, std::string_view data) {
  std::string image;
  Store(&image, l.str_length, length);
  Store(&image, l.str_state, state);
  const size_t at = (state & kAscii) ? l.ascii_data : l.compact_data;
  image.resize(std::max(image.size(), at + data.size() + 1));
  std::memcpy(image.data() + at, data.data(), data.size());
  return image;
}

TEST(PythonCodeObjectTest, ReadPythonStringRejectsCorruptObjects) {
  const PythonObjectLayout& l = FindPythonLayout({3, 12, 0})->object;
  FakeMemory mem;
  const auto read = [&](uint64_t addr, size_t max_chars = 4096) {
    return ReadPythonString(mem.Reader(), l, addr, max_chars);
  };
  mem.Put(0x1000, StrImage(l, 3, kCompact | kAscii | Kind(1), "abc"));
  mem.Put(0x2000, StrImage(l, int64_t{1} << 40, kCompact | kAscii | Kind(1), "abc"));
  mem.Put(0x3000, StrImage(l, -5, kCompact | kAscii | Kind(1), ""));
  mem.Put(0x4000, StrImage(l, 3, kCompact | Kind(3), "abcdefghi"));
  mem.Put(0x5000, StrImage(l, 3, Kind(1), "abc"));                    // not compact
  mem.Put(0x6000, StrImage(l, 2, kCompact | kAscii | Kind(1), "a\xff"));
  mem.Put(0x7000, StrImage(l, 1, kCompact | Kind(4), std::string("\x00\x00\x11\x00", 4)));  // U+110000
  mem.Put(0x8000, StrImage(l, 2, kCompact | Kind(2), std::string("\x00\xD8" "A\x00", 4)));  // lone surrogate
  mem.Put(0x9000, StrImage(l, 100, kCompact | kAscii | Kind(1), "short"));  // data runs off the image

  ASSERT_TRUE(read(0x1000).ok());
  EXPECT_EQ(*read(0x1000), "abc");
  EXPECT_TRUE(read(0x1000, 3).ok());
  EXPECT_EQ(read(0x1000, 2).status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(read(0x2000).status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(read(0x2000).status().message().find("over the limit"), std::string::npos);
  EXPECT_EQ(read(0x3000).status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(read(0x4000).status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(read(0x5000).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(read(0x6000).status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(read(0x7000).status().code(), StatusCode::kDataLoss);
  ASSERT_TRUE(read(0x8000).ok());
  EXPECT_EQ(*read(0x8000), "\xEF\xBF\xBD" "A");
  EXPECT_FALSE(read(0x9000).ok());
  EXPECT_FALSE(read(0xA000).ok());
  EXPECT_EQ(read(0).status().code(), StatusCode::kInvalidArgument);
}

TEST(PythonCodeObjectTest, ReadPythonBytesRejectsCorruptSizes) {
  const PythonObjectLayout& l = FindPythonLayout({3, 11, 0})->object;
  FakeMemory mem;
  std::string ok, negative, huge;
  Store(&ok, l.bytes_size, int64_t{2});
  Store(&ok, l.bytes_data, uint16_t{0x0201});
  Store(&negative, l.bytes_size, int64_t{-1});
  Store(&huge, l.bytes_size, int64_t{1} << 40);
  mem.Put(0x1000, ok);
  mem.Put(0x2000, negative);
  mem.Put(0x3000, huge);
  ASSERT_TRUE(ReadPythonBytes(mem.Reader(), l, 0x1000).ok());
  EXPECT_EQ(*ReadPythonBytes(mem.Reader(), l, 0x1000), std::string("\x01\x02", 2));
  EXPECT_EQ(ReadPythonBytes(mem.Reader(), l, 0x1000, 1).status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(ReadPythonBytes(mem.Reader(), l, 0x2000).status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(ReadPythonBytes(mem.Reader(), l, 0x3000).status().code(), StatusCode::kResourceExhausted);
}

TEST(PythonCodeObjectTest, ReadCodeObjectChecksWhatItReads) {
  for (int minor : {10, 11, 12, 13}) {
    SCOPED_TRACE(minor);
    const PythonLayout& l = *FindPythonLayout({3, minor, 0});
    FakeMemory mem;
    mem.Put(0x10000, StrImage(l.object, 1, kCompact | kAscii | Kind(1), "f"));
    mem.Put(0x20000, StrImage(l.object, 4, kCompact | kAscii | Kind(1), "a.py"));
    std::string table;
    Store(&table, l.object.bytes_size, int64_t{0});
    mem.Put(0x30000, table);
    const auto code_image = [&](int32_t firstlineno, uint64_t filename) {
      std::string c;
      Store(&c, l.code.argcount, int32_t{2});
      Store(&c, l.code.flags, int32_t{3});
      Store(&c, l.code.firstlineno, firstlineno);
      Store(&c, l.code.name, uint64_t{0x10000});
      if (l.code.qualname >= 0) Store(&c, static_cast<size_t>(l.code.qualname), uint64_t{0x10000});
      Store(&c, l.code.filename, filename);
      Store(&c, l.code.linetable, uint64_t{0x30000});
      return c;
    };
    mem.Put(0x40000, code_image(7, 0x20000));
    mem.Put(0x50000, code_image(-1, 0x20000));
    mem.Put(0x60000, code_image(7, 0));
    mem.Put(0x70000, code_image(7, 0x20004));  // misaligned object pointer
    StatusOr<PythonCodeInfo> info = ReadCodeObject(mem.Reader(), l, 0x40000);
    ASSERT_TRUE(info.ok()) << info.status().ToString();
    EXPECT_EQ(info->name, "f");
    EXPECT_EQ(info->filename, "a.py");
    EXPECT_EQ(info->firstlineno, 7);
    EXPECT_EQ(info->fingerprint, ws_py_fingerprint(2, 3, 7));
    EXPECT_FALSE(ReadCodeObject(mem.Reader(), l, 0x50000).ok());
    EXPECT_FALSE(ReadCodeObject(mem.Reader(), l, 0x60000).ok());
    EXPECT_FALSE(ReadCodeObject(mem.Reader(), l, 0x70000).ok());
    EXPECT_FALSE(ReadCodeObject(mem.Reader(), l, 0x40001).ok());
    EXPECT_FALSE(ReadCodeObject(mem.Reader(), l, 0x80000).ok());
  }
}

TEST(ProcessMemoryReaderTest, ReadsMappedAndRejectsUnmappedMemory) {
  const ReadMemoryFn read = ProcessMemoryReader(static_cast<uint32_t>(getpid()));
  const char secret[] = "warpscope reads this";
  char buf[sizeof(secret)] = {};
  ASSERT_TRUE(read(reinterpret_cast<uintptr_t>(secret), buf, sizeof(buf)).ok());
  EXPECT_STREQ(buf, secret);

  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  char* m = static_cast<char*>(mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(m, MAP_FAILED);
  ASSERT_EQ(munmap(m + page, page), 0);
  // Straddling into the unmapped page: a short process_vm_readv, still an error.
  EXPECT_EQ(read(reinterpret_cast<uintptr_t>(m + page - 8), buf, 16).code(), StatusCode::kDataLoss);
  ASSERT_EQ(munmap(m, page), 0);
  EXPECT_EQ(read(reinterpret_cast<uintptr_t>(m), buf, 8).code(), StatusCode::kDataLoss);
  EXPECT_EQ(read(8, buf, 8).code(), StatusCode::kDataLoss);
}

TEST(ProcessMemoryReaderTest, ExitedProcessIsNotFound) {
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) _exit(0);
  ASSERT_EQ(waitpid(pid, nullptr, 0), pid);
  char buf[8];
  const Status s = ProcessMemoryReader(static_cast<uint32_t>(pid))(reinterpret_cast<uintptr_t>(&buf), buf, 8);
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << s.ToString();
}

// The fallback: a child makes process_vm_readv fail with EPERM (as container
// seccomp profiles do) and must still read its own memory via /proc/PID/mem.
TEST(ProcessMemoryReaderTest, FallsBackToProcMemWhenProcessVmReadvIsFiltered) {
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_readv, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    sock_fprog prog{static_cast<unsigned short>(sizeof(filter) / sizeof(filter[0])), filter};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
      _exit(77);
    }
    const char secret[] = "via /proc/PID/mem";
    char buf[sizeof(secret)] = {};
    iovec local{buf, sizeof(buf)}, remote{const_cast<char*>(secret), sizeof(secret)};
    if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != -1 || errno != EPERM) _exit(2);
    const ReadMemoryFn read = ProcessMemoryReader(static_cast<uint32_t>(getpid()));
    if (!read(reinterpret_cast<uintptr_t>(secret), buf, sizeof(buf)).ok()) _exit(3);
    if (std::memcmp(buf, secret, sizeof(secret)) != 0) _exit(4);
    if (read(8, buf, 8).code() != StatusCode::kDataLoss) _exit(5);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77) GTEST_SKIP() << "cannot install a seccomp filter here";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1-5: see the child's checks";
}

}  // namespace
}  // namespace warpscope
