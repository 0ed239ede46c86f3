// Reads our pprof output with the reference reader, `go tool pprof` (Debian's
// golang-go), so that format mistakes show up as its warnings or wrong numbers.
// Skipped when no Go toolchain is installed.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "model/formats/pprof_writer.h"
#include "tests/support/go_tool_pprof.h"
#include "tests/support/test_profile.h"
#include "base/file_util.h"

namespace warpscope {
namespace {

using testing::FindGo;
using CommandResult = testing::GoToolResult;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

std::vector<std::string> Fields(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream in(line);
  std::string field;
  while (in >> field) fields.push_back(field);
  return fields;
}

class GoToolPprofTest : public ::testing::Test {
 protected:
  void SetUp() override {
    go_ = FindGo();
    if (go_.empty()) GTEST_SKIP() << "no `go` in PATH or /usr/lib/go/bin (install golang-go to run this test)";
    char tmpl[] = "/tmp/ws_pprof_go_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    for (const char* sub : {"/home", "/gocache", "/gopath", "/pprof"}) {
      ASSERT_EQ(::mkdir((dir_ + sub).c_str(), 0755), 0);
    }
    auto gz = EncodePprofGzip(testing::MakeTestProfile());
    ASSERT_TRUE(gz.ok()) << gz.status().ToString();
    profile_path_ = dir_ + "/cpu.pb.gz";
    ASSERT_TRUE(WriteFileAtomically(profile_path_, *gz).ok());
  }
  void TearDown() override {
    std::error_code ignored;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
  }

  CommandResult Pprof(const std::string& mode) { return testing::RunGoToolPprof(go_, dir_, mode, profile_path_); }

  static void ExpectCleanStderr(const CommandResult& r) {
    for (const std::string& line : Lines(r.err)) {
      for (const char* bad : {"warning", "Warning", "error", "Error", "failed"}) {
        EXPECT_EQ(line.find(bad), std::string::npos) << "go tool pprof stderr: " << line;
      }
    }
  }

  std::string go_;
  std::string dir_;
  std::string profile_path_;
};

TEST_F(GoToolPprofTest, RawReadsEverySample) {
  const CommandResult r = Pprof("-raw");
  ASSERT_EQ(r.exit_code, 0) << "stdout:\n" << r.out << "\nstderr:\n" << r.err;
  ExpectCleanStderr(r);
  EXPECT_NE(r.out.find("PeriodType: cpu nanoseconds"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Period: 10000000"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("samples/count cpu/nanoseconds[dflt]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("/usr/bin/app"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("abcdef0123456789"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[kernel.kallsyms]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ringbuf_drops=3"), std::string::npos) << r.out;
  // The merged sample: 5 samples, 50ms.
  EXPECT_NE(r.out.find("5   50000000"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("thread_name:[app-worker]"), std::string::npos) << r.out;
}

TEST_F(GoToolPprofTest, TopShowsFlatTimePerFunction) {
  const CommandResult r = Pprof("-top");
  ASSERT_EQ(r.exit_code, 0) << "stdout:\n" << r.out << "\nstderr:\n" << r.err;
  ExpectCleanStderr(r);
  // The default sample type is cpu: 21 samples of 10ms.
  EXPECT_NE(r.out.find("Showing nodes accounting for 210ms, 100% of 210ms total"), std::string::npos) << r.out;
  struct Want {
    const char* function;
    const char* flat;
    const char* cum;
  };
  const Want want[] = {
      {"inline_helper", "90ms", "120ms"}, {"spin", "70ms", "70ms"},
      {"do_syscall_64", "20ms", "30ms"},  {"libfoo.so+0x1a2b", "20ms", "30ms"},
      {"__x64_sys_write", "10ms", "10ms"}, {"compute()", "0", "120ms"},
      {"main", "0", "120ms"},             {"worker_main", "0", "70ms"},
  };
  for (const Want& w : want) {
    SCOPED_TRACE(w.function);
    bool found = false;
    for (const std::string& line : Lines(r.out)) {
      // Columns: flat flat% sum% cum cum% name [(inline)]
      const std::vector<std::string> f = Fields(line);
      if (f.size() < 6 || f[5] != w.function) continue;
      found = true;
      EXPECT_EQ(f[0], w.flat) << line;
      EXPECT_EQ(f[3], w.cum) << line;
    }
    EXPECT_TRUE(found) << r.out;
  }
}

}  // namespace
}  // namespace warpscope
