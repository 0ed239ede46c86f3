#include "agent/core/cuda_library.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "base/file_util.h"

namespace warpscope {
namespace {

namespace fs = std::filesystem;

class CudaLibraryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ws_cuda_library_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    fs::create_directory(dir_ + "/out");
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& bytes) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  std::string dir_;
};

TEST_F(CudaLibraryTest, CopiesReadableByEveryoneAndReplacesByRename) {
  const std::string v1 = Write("v1.so", std::string("\x7f" "ELF", 4) + "one");
  auto published = PublishCudaLibrary(v1, dir_ + "/out");
  ASSERT_TRUE(published.ok()) << published.status().ToString();
  EXPECT_EQ(*published, dir_ + "/out/libwarpscope_cuda.so");
  EXPECT_EQ(*ReadFileToString(*published), std::string("\x7f" "ELF", 4) + "one");
  struct stat st {};
  ASSERT_EQ(stat(published->c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  const ino_t first = st.st_ino;

  // The same bytes again: the file an application may have mapped stays.
  ASSERT_TRUE(PublishCudaLibrary(v1, dir_ + "/out").ok());
  ASSERT_EQ(stat(published->c_str(), &st), 0);
  EXPECT_EQ(st.st_ino, first);

  // An upgrade: a new inode, so a running application keeps the old one.
  const std::string v2 = Write("v2.so", std::string("\x7f" "ELF", 4) + "two");
  ASSERT_TRUE(PublishCudaLibrary(v2, dir_ + "/out").ok());
  ASSERT_EQ(stat(published->c_str(), &st), 0);
  EXPECT_NE(st.st_ino, first);
  EXPECT_EQ(*ReadFileToString(*published), std::string("\x7f" "ELF", 4) + "two");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_ + "/out"), fs::directory_iterator()), 1);
}

TEST_F(CudaLibraryTest, MakesAMissingDirectory) {
  const std::string lib = Write("lib.so", std::string("\x7f" "ELF", 4));
  auto published = PublishCudaLibrary(lib, dir_ + "/run-warpscope");
  ASSERT_TRUE(published.ok()) << published.status().ToString();
  struct stat st {};
  ASSERT_EQ(stat((dir_ + "/run-warpscope").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u);
}

TEST_F(CudaLibraryTest, ClearErrors) {
  const std::string lib = Write("lib.so", std::string("\x7f" "ELF", 4));
  auto missing = PublishCudaLibrary(dir_ + "/none.so", dir_ + "/out");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("none.so"), std::string::npos) << missing.status().message();
  auto not_elf = PublishCudaLibrary(Write("text", "hello"), dir_ + "/out");
  ASSERT_FALSE(not_elf.ok());
  EXPECT_NE(not_elf.status().message().find("not an ELF"), std::string::npos);
  auto no_dir = PublishCudaLibrary(lib, dir_ + "/absent/below");
  ASSERT_FALSE(no_dir.ok());
  EXPECT_NE(no_dir.status().message().find("--cuda-library-dir"), std::string::npos);
  auto file_dir = PublishCudaLibrary(lib, lib);
  ASSERT_FALSE(file_dir.ok());
  EXPECT_NE(file_dir.status().message().find("not a directory"), std::string::npos);
  EXPECT_FALSE(PublishCudaLibrary("", dir_ + "/out").ok());
}

TEST(CudaLibraryPathTest, DefaultIsBesideTheExecutable) {
  const std::string path = DefaultCudaLibraryPath();
  EXPECT_NE(path.find("/../lib/warpscope/libwarpscope_cuda.so"), std::string::npos) << path;
}

}  // namespace
}  // namespace warpscope
