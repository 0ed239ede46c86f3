#include "query/profile_export.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "proto/pprof/profile.pb.h"
#include "query/render_test_frames.h"
#include "tests/support/go_tool_pprof.h"

namespace warpscope::query {
namespace {

namespace pb = ::perftools::profiles;
using testing::CpuProfile;
using testing::Inlined;
using testing::Kernel;
using testing::Native;
using testing::Python;
using testing::Stack;
using testing::Unsymbolized;

// Stacks with known answers (period 10ms):
//   main;compute;helper(inlined in compute)             3
//   main;compute;compute;helper(inlined)                 4  (recursion)
//   main;compute;libfoo.so+0x1a2b;entry_SYSCALL_64[k];do_syscall_64[k]  2
//   <module>;Model.forward (Python)                       5
storage::MergedProfile TestProfile() {
  storage::ResolvedFrame compute = Native("compute", "/usr/bin/app", 0x40, 12);
  compute.system_name = "_Z7computev";
  compute.build_id = "abcdef0123456789";
  compute.file = "/src/app.cc";
  storage::ResolvedFrame helper = Inlined(Native("helper", "/usr/bin/app", 0x40, 30));
  helper.build_id = "abcdef0123456789";
  helper.file = "/src/helper.h";
  storage::ResolvedFrame main = Native("main", "/usr/bin/app", 0x10, 3);
  main.build_id = "abcdef0123456789";
  storage::ResolvedFrame compute_caller = compute;
  compute_caller.address = 0x48;
  compute_caller.line = 14;
  return CpuProfile({
      Stack({main, compute, helper}, 3),
      Stack({main, compute_caller, compute, helper}, 4),
      Stack({main, compute_caller, Unsymbolized("/usr/lib/libfoo.so", 0x1a2b), Kernel("entry_SYSCALL_64", 0xffffffff81000100),
             Kernel("do_syscall_64", 0xffffffff81000200)},
            2),
      Stack({Python("<module>", "/srv/run.py", 1), Python("Model.forward", "/srv/model.py", 42)}, 5),
  });
}

TEST(CollapsedTest, OneLinePerStackRootFirst) {
  EXPECT_EQ(RenderCollapsed(TestProfile()),
            "<module>;Model.forward 5\n"
            "main;compute;compute;helper 4\n"
            "main;compute;helper 3\n"
            "main;compute;libfoo.so+0x1a2b;entry_SYSCALL_64_[k];do_syscall_64_[k] 2\n");
}

TEST(CollapsedTest, SanitizesNamesAndMergesEqualLines) {
  EXPECT_EQ(RenderCollapsed(CpuProfile({
                Stack({Native("a;b\nc")}, 1),
                Stack({Native("x", "/usr/bin/app", 1, 1)}, 2),
                Stack({Native("x", "/usr/bin/app", 2, 2)}, 3),  // same function, other line
                Stack({}, 4),
            })),
            "[unknown] 4\na:b c 1\nx 5\n");
  EXPECT_EQ(RenderCollapsed(storage::MergedProfile{}), "");
}

std::string Gunzip(const std::string& in) {
  z_stream zs{};
  EXPECT_EQ(inflateInit2(&zs, 15 + 16), Z_OK);
  std::string out;
  char buf[1 << 14];
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  int rc = Z_OK;
  while (rc == Z_OK) {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof(buf);
    rc = inflate(&zs, Z_NO_FLUSH);
    out.append(buf, sizeof(buf) - zs.avail_out);
  }
  EXPECT_EQ(rc, Z_STREAM_END);
  inflateEnd(&zs);
  return out;
}

pb::Profile DecodePprof(const StatusOr<std::string>& gz) {
  pb::Profile profile;
  EXPECT_TRUE(gz.ok()) << gz.status().ToString();
  if (gz.ok()) {
    EXPECT_TRUE(profile.ParseFromString(Gunzip(*gz)));
  }
  return profile;
}

TEST(PprofExportTest, CpuProfileLayout) {
  const pb::Profile p = DecodePprof(RenderPprofGzip(TestProfile(), 1'000'000'000, 61'000'000'000));
  const auto str = [&](int64_t i) { return p.string_table(static_cast<int>(i)); };
  ASSERT_EQ(p.sample_type_size(), 2);
  EXPECT_EQ(str(p.sample_type(0).type()) + "/" + str(p.sample_type(0).unit()), "samples/count");
  EXPECT_EQ(str(p.sample_type(1).type()) + "/" + str(p.sample_type(1).unit()), "cpu/nanoseconds");
  EXPECT_EQ(str(p.default_sample_type()), "cpu");
  EXPECT_EQ(p.period(), 10'000'000);
  EXPECT_EQ(p.time_nanos(), 1'000'000'000);
  EXPECT_EQ(p.duration_nanos(), 60'000'000'000);
  ASSERT_EQ(p.sample_size(), 4);
  int64_t count = 0, nanos = 0;
  for (const pb::Sample& s : p.sample()) {
    ASSERT_EQ(s.value_size(), 2);
    count += s.value(0);
    nanos += s.value(1);
    EXPECT_EQ(s.label_size(), 0);  // no pid/tid in a merged profile
  }
  EXPECT_EQ(count, 14);
  EXPECT_EQ(nanos, 140'000'000);
  std::map<std::string, std::string> build_ids;
  for (const pb::Mapping& m : p.mapping()) build_ids[str(m.filename())] = str(m.build_id());
  EXPECT_EQ(build_ids, (std::map<std::string, std::string>{{"/usr/bin/app", "abcdef0123456789"},
                                                           {"/usr/lib/libfoo.so", ""},
                                                           {"[kernel.kallsyms]", ""}}));
  // helper inlined into compute: one location, two lines, innermost first.
  bool found_inline = false;
  for (const pb::Location& l : p.location()) {
    if (l.line_size() != 2) continue;
    found_inline = true;
    EXPECT_EQ(l.address(), 0x40u);
    EXPECT_EQ(str(p.function(static_cast<int>(l.line(0).function_id() - 1)).name()), "helper");
    EXPECT_EQ(l.line(0).line(), 30);
    EXPECT_EQ(str(p.function(static_cast<int>(l.line(1).function_id() - 1)).name()), "compute");
    EXPECT_EQ(str(p.function(static_cast<int>(l.line(1).function_id() - 1)).system_name()), "_Z7computev");
    EXPECT_EQ(str(p.function(static_cast<int>(l.line(1).function_id() - 1)).filename()), "/src/app.cc");
  }
  EXPECT_TRUE(found_inline);
}

TEST(PprofExportTest, OtherUnitsGiveOneSampleType) {
  storage::MergedProfile gpu = CpuProfile({Stack({Native("launch")}, 1'500)});
  gpu.type = {"gpu_time", "nanoseconds", 0};
  const pb::Profile p = DecodePprof(RenderPprofGzip(gpu, 0, 1));
  ASSERT_EQ(p.sample_type_size(), 1);
  EXPECT_EQ(p.string_table(static_cast<int>(p.sample_type(0).type())), "gpu_time");
  EXPECT_EQ(p.string_table(static_cast<int>(p.sample_type(0).unit())), "nanoseconds");
  ASSERT_EQ(p.sample_size(), 1);
  ASSERT_EQ(p.sample(0).value_size(), 1);
  EXPECT_EQ(p.sample(0).value(0), 1'500);

  const pb::Profile empty = DecodePprof(RenderPprofGzip(storage::MergedProfile{}, 0, 0));
  EXPECT_EQ(empty.sample_size(), 0);
  EXPECT_EQ(empty.sample_type_size(), 1);
}

TEST(PprofExportTest, OverflowIsAnError) {
  storage::MergedProfile huge = CpuProfile({Stack({Native("a")}, int64_t{1} << 62)});
  EXPECT_EQ(RenderPprofGzip(huge, 0, 1).status().code(), StatusCode::kInvalidArgument);
}

// `go tool pprof <mode> <file>` (tests/support/go_tool_pprof.h): its exit code, its output in *out and *err.
int RunPprof(const std::string& go, const std::string& dir, const std::string& mode, const std::string& file,
             std::string* out, std::string* err) {
  const warpscope::testing::GoToolResult r = warpscope::testing::RunGoToolPprof(go, dir, mode, file);
  *out = r.out;
  *err = r.err;
  return r.exit_code;
}

TEST(PprofExportTest, GoToolPprofReadsIt) {
  const std::string go = warpscope::testing::FindGo();
  if (go.empty()) GTEST_SKIP() << "no `go` in PATH or /usr/lib/go/bin (install golang-go to run this test)";
  char tmpl[] = "/tmp/ws_query_pprof_XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  for (const char* sub : {"/home", "/gocache", "/gopath", "/pprof"}) ASSERT_EQ(::mkdir((dir + sub).c_str(), 0755), 0);
  const auto gz = RenderPprofGzip(TestProfile(), 1'000'000'000, 61'000'000'000);
  ASSERT_TRUE(gz.ok()) << gz.status().ToString();
  ASSERT_TRUE(WriteFileAtomically(dir + "/cpu.pb.gz", *gz).ok());

  std::string out, err;
  ASSERT_EQ(RunPprof(go, dir, "-top", dir + "/cpu.pb.gz", &out, &err), 0) << out << err;
  for (const char* bad : {"warning", "Warning", "error", "Error", "failed"}) {
    EXPECT_EQ(err.find(bad), std::string::npos) << err;
  }
  EXPECT_NE(out.find("Showing nodes accounting for 140ms, 100% of 140ms total"), std::string::npos) << out;
  // flat and cum per function; recursion counted once in cum.
  const std::map<std::string, std::pair<std::string, std::string>> want = {
      {"helper", {"70ms", "70ms"}},        {"Model.forward", {"50ms", "50ms"}},
      {"do_syscall_64", {"20ms", "20ms"}}, {"entry_SYSCALL_64", {"0", "20ms"}},
      {"libfoo.so+0x1a2b", {"0", "20ms"}}, {"compute", {"0", "90ms"}},
      {"main", {"0", "90ms"}},             {"<module>", {"0", "50ms"}},
  };
  std::map<std::string, std::pair<std::string, std::string>> got;
  std::stringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    // Columns: flat flat% sum% cum cum% name [(inline)]
    std::stringstream fields(line);
    std::vector<std::string> f;
    std::string field;
    while (fields >> field) f.push_back(field);
    if (f.size() >= 6 && want.count(f[5])) got[f[5]] = {f[0], f[3]};
  }
  EXPECT_EQ(got, want) << out;

  ASSERT_EQ(RunPprof(go, dir, "-raw", dir + "/cpu.pb.gz", &out, &err), 0) << out << err;
  EXPECT_NE(out.find("samples/count cpu/nanoseconds[dflt]"), std::string::npos) << out;
  EXPECT_NE(out.find("abcdef0123456789"), std::string::npos) << out;
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}

}  // namespace
}  // namespace warpscope::query
