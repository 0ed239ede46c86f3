#include "base/file_util.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>

namespace warpscope {
namespace {

std::string TempDir() {
  char tmpl[] = "/tmp/ws_file_util_XXXXXX";
  return mkdtemp(tmpl);
}

TEST(FileUtilTest, WriteThenRead) {
  const std::string dir = TempDir();
  const std::string path = dir + "/out.bin";
  ASSERT_TRUE(WriteFileAtomically(path, std::string("abc\0def", 7)).ok());
  auto read = ReadFileToString(path);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read.value(), std::string("abc\0def", 7));
}

TEST(FileUtilTest, ReadsProcFiles) {
  auto maps = ReadFileToString("/proc/self/maps");
  ASSERT_TRUE(maps.ok());
  EXPECT_FALSE(maps->empty());
}

TEST(FileUtilTest, CheckWritableRejectsBadPaths) {
  const std::string dir = TempDir();
  EXPECT_TRUE(CheckWritable(dir + "/new.pb.gz").ok());
  struct stat st {};
  EXPECT_NE(stat((dir + "/new.pb.gz").c_str(), &st), 0) << "probe must not leave a file";
  EXPECT_FALSE(CheckWritable(dir).ok());
  EXPECT_EQ(CheckWritable("/nonexistent_dir_ws/x").code(), StatusCode::kNotFound);
  EXPECT_EQ(ReadFileToString("/nonexistent_ws").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace warpscope
