#include "model/formats/pprof_writer.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <set>
#include <string>
#include <vector>

#include "tests/support/test_profile.h"
#include "proto/pprof/profile.pb.h"

namespace warpscope {
namespace {

namespace pb = ::perftools::profiles;

std::string Gunzip(const std::string& compressed) {
  z_stream zs{};
  EXPECT_EQ(inflateInit2(&zs, 15 + 16), Z_OK);  // gzip only: a zlib header would fail
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  zs.avail_in = static_cast<uInt>(compressed.size());
  std::string out;
  char buf[16384];
  int rc = Z_OK;
  while (rc == Z_OK) {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof(buf);
    rc = inflate(&zs, Z_NO_FLUSH);
    out.append(buf, sizeof(buf) - zs.avail_out);
  }
  inflateEnd(&zs);
  EXPECT_EQ(rc, Z_STREAM_END);
  EXPECT_EQ(zs.avail_in, 0u) << "trailing bytes after the gzip stream";
  return out;
}

class DecodedPprofTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto gz = EncodePprofGzip(testing::MakeTestProfile());
    ASSERT_TRUE(gz.ok()) << gz.status().ToString();
    ASSERT_GE(gz->size(), 2u);
    EXPECT_EQ(static_cast<unsigned char>((*gz)[0]), 0x1f);
    EXPECT_EQ(static_cast<unsigned char>((*gz)[1]), 0x8b);
    raw_ = Gunzip(*gz);
    ASSERT_TRUE(out_.ParseFromString(raw_));
  }
  std::string Str(int64_t index) const {
    EXPECT_GE(index, 0);
    EXPECT_LT(index, out_.string_table_size());
    return index >= 0 && index < out_.string_table_size() ? out_.string_table(static_cast<int>(index)) : "<bad>";
  }
  std::vector<uint64_t> LocationIds(const pb::Sample& s) const { return {s.location_id().begin(), s.location_id().end()}; }
  std::vector<int64_t> Values(const pb::Sample& s) const { return {s.value().begin(), s.value().end()}; }
  std::vector<std::pair<std::string, std::string>> Labels(const pb::Sample& s) const {
    std::vector<std::pair<std::string, std::string>> labels;
    for (const pb::Label& l : s.label()) {
      EXPECT_EQ(l.num(), 0);
      labels.emplace_back(Str(l.key()), Str(l.str()));
    }
    return labels;
  }
  std::string FunctionName(uint64_t id) const {
    for (const pb::Function& f : out_.function()) {
      if (f.id() == id) return Str(f.name());
    }
    return "<missing>";
  }

  std::string raw_;
  pb::Profile out_;
};

TEST_F(DecodedPprofTest, GzipMatchesUncompressedEncoding) {
  auto plain = EncodePprof(testing::MakeTestProfile());
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(*plain, raw_);
}

TEST_F(DecodedPprofTest, HeaderFields) {
  ASSERT_GT(out_.string_table_size(), 0);
  EXPECT_EQ(out_.string_table(0), "");
  // Every string is stored once.
  std::set<std::string> unique(out_.string_table().begin(), out_.string_table().end());
  EXPECT_EQ(unique.size(), static_cast<size_t>(out_.string_table_size()));

  ASSERT_EQ(out_.sample_type_size(), 2);
  EXPECT_EQ(Str(out_.sample_type(0).type()), "samples");
  EXPECT_EQ(Str(out_.sample_type(0).unit()), "count");
  EXPECT_EQ(Str(out_.sample_type(1).type()), "cpu");
  EXPECT_EQ(Str(out_.sample_type(1).unit()), "nanoseconds");
  EXPECT_EQ(Str(out_.period_type().type()), "cpu");
  EXPECT_EQ(Str(out_.period_type().unit()), "nanoseconds");
  EXPECT_EQ(out_.period(), testing::kTestPeriodNanos);
  EXPECT_EQ(Str(out_.default_sample_type()), "cpu");
  EXPECT_EQ(out_.time_nanos(), testing::kTestTimeNanos);
  EXPECT_EQ(out_.duration_nanos(), testing::kTestDurationNanos);
  EXPECT_EQ(out_.drop_frames(), 0);
  EXPECT_EQ(out_.keep_frames(), 0);

  std::vector<std::string> comments;
  for (int64_t c : out_.comment()) comments.push_back(Str(c));
  EXPECT_EQ(comments, (std::vector<std::string>{"warpscope 0.1.0", "ringbuf_drops=3", "truncated_stacks=1"}));
}

TEST_F(DecodedPprofTest, MappingsKeepOrderAndTellTheTruth) {
  ASSERT_EQ(out_.mapping_size(), 4);
  struct Want {
    uint64_t start, limit, offset;
    const char* file;
    const char* build_id;
    bool filenames, line_numbers, inline_frames;
  };
  const Want want[] = {
      {0x400000, 0x500000, 0, "/usr/bin/app", "abcdef0123456789", true, true, true},
      {0x7f0000000000, 0x7f0000100000, 0x1000, "/usr/lib/libfoo.so", "", false, false, false},
      {0xffffffff81000000, 0xffffffff82000000, 0, "[kernel.kallsyms]", "0badc0de", false, false, false},
      {0x400000, 0x480000, 0, "/opt/bin/worker", "feedface", false, false, false},
  };
  for (int i = 0; i < 4; ++i) {
    SCOPED_TRACE(i);
    const pb::Mapping& m = out_.mapping(i);
    EXPECT_EQ(m.id(), static_cast<uint64_t>(i + 1));
    EXPECT_EQ(m.memory_start(), want[i].start);
    EXPECT_EQ(m.memory_limit(), want[i].limit);
    EXPECT_EQ(m.file_offset(), want[i].offset);
    EXPECT_EQ(Str(m.filename()), want[i].file);
    EXPECT_EQ(Str(m.build_id()), want[i].build_id);
    EXPECT_TRUE(m.has_functions());
    EXPECT_EQ(m.has_filenames(), want[i].filenames);
    EXPECT_EQ(m.has_line_numbers(), want[i].line_numbers);
    EXPECT_EQ(m.has_inline_frames(), want[i].inline_frames);
  }
}

TEST_F(DecodedPprofTest, FunctionsIncludeOneSyntheticForTheUnsymbolizedFrame) {
  struct Want {
    const char* name;
    const char* system_name;
    const char* filename;
  };
  const Want want[] = {
      {"main", "main", "app.cc"},
      {"compute()", "_Z7computev", "app.cc"},
      {"inline_helper", "inline_helper", "helper.h"},
      {"entry_SYSCALL_64", "entry_SYSCALL_64", ""},
      {"do_syscall_64", "do_syscall_64", ""},
      {"__x64_sys_write", "__x64_sys_write", ""},
      {"worker_main", "worker_main", ""},
      {"spin", "spin", ""},
      {"libfoo.so+0x1a2b", "libfoo.so+0x1a2b", ""},
  };
  ASSERT_EQ(out_.function_size(), 9);
  for (int i = 0; i < 9; ++i) {
    SCOPED_TRACE(i);
    const pb::Function& f = out_.function(i);
    EXPECT_EQ(f.id(), static_cast<uint64_t>(i + 1));
    EXPECT_EQ(Str(f.name()), want[i].name);
    EXPECT_EQ(Str(f.system_name()), want[i].system_name);
    EXPECT_EQ(Str(f.filename()), want[i].filename);
  }
}

TEST_F(DecodedPprofTest, LocationsPointAtMappingsAndFunctions) {
  struct Want {
    uint64_t mapping_id;
    uint64_t address;
    std::vector<std::pair<std::string, int64_t>> lines;  // innermost first
  };
  const std::vector<Want> want = {
      {1, 0x401000, {{"main", 10}}},
      {1, 0x402000, {{"inline_helper", 42}, {"compute()", 30}}},
      {2, 0x7f0000000a2b, {{"libfoo.so+0x1a2b", 0}}},
      {3, 0xffffffff81000100, {{"entry_SYSCALL_64", 0}}},
      {3, 0xffffffff81000200, {{"do_syscall_64", 0}}},
      {3, 0xffffffff81000300, {{"__x64_sys_write", 0}}},
      {4, 0x401100, {{"worker_main", 0}}},
      {4, 0x401200, {{"spin", 0}}},
      {1, 0x401050, {{"compute()", 31}}},
  };
  ASSERT_EQ(out_.location_size(), static_cast<int>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(i);
    const pb::Location& l = out_.location(static_cast<int>(i));
    EXPECT_EQ(l.id(), i + 1);
    EXPECT_EQ(l.mapping_id(), want[i].mapping_id);
    EXPECT_EQ(l.address(), want[i].address);
    EXPECT_FALSE(l.is_folded());
    std::vector<std::pair<std::string, int64_t>> lines;
    for (const pb::Line& line : l.line()) lines.emplace_back(FunctionName(line.function_id()), line.line());
    EXPECT_EQ(lines, want[i].lines);
  }
}

TEST_F(DecodedPprofTest, SamplesAreLeafFirstWithValuesAndStringLabels) {
  using LabelList = std::vector<std::pair<std::string, std::string>>;
  const LabelList app_main = {{"pid", "100"}, {"tid", "100"}, {"comm", "app"}, {"thread_name", "app"}};
  const LabelList app_thread = {{"pid", "100"}, {"tid", "101"}, {"comm", "app"}, {"thread_name", "app-worker"}};
  const LabelList worker_main = {{"pid", "200"}, {"tid", "200"}, {"comm", "worker"}, {"thread_name", "worker"}};
  const LabelList worker_second = {{"pid", "200"}, {"tid", "201"}, {"comm", "worker"}, {"thread_name", "worker-2"}};
  struct Want {
    std::vector<uint64_t> locations;
    int64_t count;
    LabelList labels;
  };
  const std::vector<Want> want = {
      {{2, 1}, 5, app_main},
      {{3, 2, 1}, 2, app_thread},
      {{6, 5, 4, 3, 2, 1}, 1, app_main},
      {{2, 9, 1}, 4, app_thread},
      {{8, 7}, 6, worker_main},
      {{8, 7}, 1, worker_second},
      {{5, 4}, 2, worker_main},
  };
  ASSERT_EQ(out_.sample_size(), static_cast<int>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(i);
    const pb::Sample& s = out_.sample(static_cast<int>(i));
    EXPECT_EQ(LocationIds(s), want[i].locations);
    EXPECT_EQ(Values(s), (std::vector<int64_t>{want[i].count, want[i].count * testing::kTestPeriodNanos}));
    EXPECT_EQ(Labels(s), want[i].labels);
  }
}

TEST(PprofWriterTest, OmitsUnknownNameLabelsAndNamesKernelMapping) {
  ProfileBuilder b(0, 1000, 1000);
  ProfileMapping kernel{0, 0xffffffff81000000, 0xffffffff82000000, 0, "", "", true};
  const uint64_t m = b.InternMapping(kernel);
  const uint64_t l = b.InternLocation(m, 0xffffffff81000010, FrameKind::kKernel, {});
  b.AddSample({l}, 1, SampleLabels{0, 0, "", ""});
  auto bytes = EncodePprof(b.Finish(1));
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  pb::Profile out;
  ASSERT_TRUE(out.ParseFromString(*bytes));
  ASSERT_EQ(out.mapping_size(), 1);
  EXPECT_EQ(out.string_table(static_cast<int>(out.mapping(0).filename())), "[kernel.kallsyms]");
  ASSERT_EQ(out.sample_size(), 1);
  ASSERT_EQ(out.sample(0).label_size(), 2);  // pid and tid only
  ASSERT_EQ(out.function_size(), 1);
  EXPECT_EQ(out.string_table(static_cast<int>(out.function(0).name())), "0xffffffff81000010");
}

TEST(PprofWriterTest, EmptyProfileEncodes) {
  auto bytes = EncodePprofGzip(ProfileBuilder(0, 1, 1).Finish(0));
  EXPECT_TRUE(bytes.ok());
}

TEST(PprofWriterTest, RejectsDanglingIds) {
  Profile p = testing::MakeTestProfile();
  p.samples[0].location_ids.push_back(99);
  auto bytes = EncodePprof(p);
  ASSERT_FALSE(bytes.ok());
  EXPECT_EQ(bytes.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bytes.status().message().find("99"), std::string::npos);

  p = testing::MakeTestProfile();
  p.locations[0].lines[0].function_id = 0;
  EXPECT_EQ(EncodePprof(p).status().code(), StatusCode::kInvalidArgument);

  p = testing::MakeTestProfile();
  p.locations[0].mapping_id = 17;
  EXPECT_EQ(EncodePprofGzip(p).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace warpscope
