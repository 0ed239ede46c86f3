#include "model/formats/top_functions.h"

#include <gtest/gtest.h>

#include "tests/support/test_profile.h"

namespace warpscope {
namespace {

struct Row {
  std::string name;
  std::string binary;
  int64_t self;
  int64_t total;
  bool operator==(const Row&) const = default;
};

std::vector<Row> Rows(const std::vector<FunctionCost>& costs) {
  std::vector<Row> rows;
  for (const FunctionCost& c : costs) rows.push_back(Row{c.name, c.binary, c.self, c.total});
  return rows;
}

void PrintTo(const Row& r, std::ostream* os) {
  *os << "{" << r.name << ", " << r.binary << ", " << r.self << ", " << r.total << "}";
}

TEST(TopFunctionsTest, SelfAndTotalOfTestProfile) {
  const std::vector<Row> want = {
      {"inline_helper", "/usr/bin/app", 9, 12},
      {"spin", "/opt/bin/worker", 7, 7},
      {"do_syscall_64", "[kernel.kallsyms]", 2, 3},
      {"libfoo.so+0x1a2b", "/usr/lib/libfoo.so", 2, 3},
      {"__x64_sys_write", "[kernel.kallsyms]", 1, 1},
      {"compute()", "/usr/bin/app", 0, 12},  // recursion (sample of 4) counted once
      {"entry_SYSCALL_64", "[kernel.kallsyms]", 0, 3},
      {"main", "/usr/bin/app", 0, 12},
      {"worker_main", "/opt/bin/worker", 0, 7},
  };
  EXPECT_EQ(Rows(TopFunctions(testing::MakeTestProfile(), 100)), want);
  EXPECT_EQ(Rows(TopFunctions(testing::MakeTestProfile(), 3)), std::vector<Row>(want.begin(), want.begin() + 3));
  EXPECT_TRUE(TopFunctions(testing::MakeTestProfile(), 0).empty());
}

TEST(TopFunctionsTest, SameNameInTwoBinariesIsTwoRows) {
  ProfileBuilder b(0, 1, 1);
  const uint64_t m1 = b.InternMapping({0, 0x1000, 0x2000, 0, "/a/main", "", false});
  const uint64_t m2 = b.InternMapping({0, 0x1000, 0x2000, 0, "/b/main", "", false});
  const uint64_t f = b.InternFunction("main", "main");
  b.AddSample({b.InternLocation(m1, 0x1100, FrameKind::kNative, {{f, 0}})}, 2, {});
  b.AddSample({b.InternLocation(m2, 0x1100, FrameKind::kNative, {{f, 0}})}, 1, {});
  const std::vector<Row> want = {{"main", "/a/main", 2, 2}, {"main", "/b/main", 1, 1}};
  EXPECT_EQ(Rows(TopFunctions(b.Finish(1), 10)), want);
}

TEST(TopFunctionsTest, FormatsATable) {
  const std::string want =
      "21 samples over 2.0s at 100 Hz (210ms of CPU time). Top 3 of 9 functions by self time:\n"
      "    SELF%    TOTAL%    SAMPLES  FUNCTION       [binary]\n"
      "   42.86%    57.14%          9  inline_helper  [app]\n"
      "   33.33%    33.33%          7  spin           [worker]\n"
      "    9.52%    14.29%          2  do_syscall_64  [kernel.kallsyms]\n";
  EXPECT_EQ(FormatTopFunctions(testing::MakeTestProfile(), 3), want);
}

TEST(TopFunctionsTest, FormatsAnEmptyProfile) {
  EXPECT_EQ(FormatTopFunctions(ProfileBuilder(0, 1, 1).Finish(3'000'000'000), 10),
            "No samples were recorded in 3.0s.\n");
}

}  // namespace
}  // namespace warpscope
