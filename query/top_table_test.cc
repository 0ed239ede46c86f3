#include "query/top_table.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "query/render_test_frames.h"

namespace warpscope::query {
namespace {

using nlohmann::json;
using testing::CpuProfile;
using testing::Inlined;
using testing::Kernel;
using testing::Native;
using testing::Python;
using testing::Stack;

storage::MergedProfile TestProfile() {
  return CpuProfile({
      Stack({Native("main"), Native("fib"), Native("fib"), Native("fib")}, 4),  // recursion
      Stack({Native("main"), Native("compute", "/usr/bin/app", 0x40), Inlined(Native("helper", "/usr/bin/app", 0x40))},
            3),
      Stack({Native("main"), Native("compute"), Kernel("do_syscall_64")}, 2),
      Stack({Python("<module>", "/srv/run.py", 1), Python("work", "/srv/run.py", 7)}, 1),
  });
}

TEST(TopTableTest, SelfAndTotalWithRecursionCountedOncePerStack) {
  EXPECT_EQ(RenderTopJson(TestProfile(), {}),
            R"({"version":1,"type":"cpu","unit":"samples","period_nanos":10000000,"total":10,"function_count":7,)"
            R"("functions":[)"
            R"({"name":"fib","binary":"app","kind":0,"self":4,"total":4},)"
            R"({"name":"helper","binary":"app","kind":0,"self":3,"total":3},)"
            R"({"name":"do_syscall_64","binary":"[kernel.kallsyms]","kind":1,"self":2,"total":2},)"
            R"({"name":"work","binary":"/srv/run.py","kind":2,"self":1,"total":1},)"
            R"({"name":"main","binary":"app","kind":0,"self":0,"total":9},)"
            R"({"name":"compute","binary":"app","kind":0,"self":0,"total":5},)"
            R"({"name":"<module>","binary":"/srv/run.py","kind":2,"self":0,"total":1}]})");
}

TEST(TopTableTest, ByTotalWithLimit) {
  const json answer =
      json::parse(RenderTopJson(TestProfile(), {.sort_by = TopOptions::SortBy::kTotal, .limit = 3}));
  ASSERT_EQ(answer["functions"].size(), 3u);
  EXPECT_EQ(answer["function_count"], 7);
  EXPECT_EQ(answer["functions"][0]["name"], "main");
  EXPECT_EQ(answer["functions"][1]["name"], "compute");
  EXPECT_EQ(answer["functions"][2]["name"], "fib");
  EXPECT_EQ(answer["total"], 10);
}

TEST(TopTableTest, EmptyProfileAndWeirdNames) {
  EXPECT_EQ(RenderTopJson(storage::MergedProfile{}, {}),
            R"({"version":1,"type":"","unit":"","period_nanos":0,"total":0,"function_count":0,"functions":[]})");
  const json answer = json::parse(RenderTopJson(CpuProfile({Stack({Native("a\"\xFF\n")}, 1)}), {}));
  EXPECT_EQ(answer["functions"][0]["name"], "a\"\xEF\xBF\xBD\n");
}

}  // namespace
}  // namespace warpscope::query
