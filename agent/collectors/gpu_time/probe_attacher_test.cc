// OpenMappedFileForProbe against files a local user controls: a fixture laid
// out like /proc (ProcFs's seam) whose map_files entries and process roots
// point at FIFOs, links and other files.
#include "agent/collectors/gpu_time/probe_attacher.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace warpscope::gpu {
namespace {

namespace fs = std::filesystem;

class OpenMappedFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ws-probe-open-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    fs::create_directories(dir_ + "/proc/7/map_files");
    fs::create_directories(dir_ + "/proc/7/root/lib");
    library_ = dir_ + "/proc/7/root/lib/libwarpscope_cuda.so";
    std::ofstream(library_) << "not really ELF";
  }
  void TearDown() override { fs::remove_all(dir_); }
  // The mapping as /proc/PID/maps would give it for `path` (inside the root).
  MemoryMapping Mapping(const std::string& file, const std::string& path) {
    struct stat st {};
    EXPECT_EQ(stat(file.c_str(), &st), 0);
    MemoryMapping m;
    m.start = 0x1000;
    m.end = 0x2000;
    m.executable = true;
    m.dev_major = major(st.st_dev);
    m.dev_minor = minor(st.st_dev);
    m.inode = st.st_ino;
    m.path = path;
    return m;
  }
  std::string MapFile() const { return dir_ + "/proc/7/map_files/1000-2000"; }
  ProcFs procfs() const { return ProcFs(dir_ + "/proc"); }

  std::string dir_;
  std::string library_;
};

TEST_F(OpenMappedFileTest, TheMappedRegularFileOpensThroughMapFiles) {
  fs::create_symlink(library_, MapFile());
  auto fd = OpenMappedFileForProbe(procfs(), 7, Mapping(library_, "/lib/libwarpscope_cuda.so"));
  ASSERT_TRUE(fd.ok()) << fd.status().ToString();
  struct stat st {};
  ASSERT_EQ(fstat(fd->get(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
}

// Whatever map_files leads to that is not a regular file is refused without
// waiting: a FIFO's open would block until a writer came.
TEST_F(OpenMappedFileTest, AFifoIsRefusedWithoutBlocking) {
  const std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0666), 0);
  fs::create_symlink(fifo, MapFile());
  auto fd = OpenMappedFileForProbe(procfs(), 7, Mapping(library_, "/lib/libwarpscope_cuda.so"));
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.status().code(), StatusCode::kFailedPrecondition) << fd.status().ToString();
}

// Without map_files (the mapping gone, or no CAP_CHECKPOINT_RESTORE), the
// path in the process's root is used only when it is the mapped inode.
TEST_F(OpenMappedFileTest, WithoutMapFilesThePathMustBeTheMappedFile) {
  const MemoryMapping m = Mapping(library_, "/lib/libwarpscope_cuda.so");
  auto fd = OpenMappedFileForProbe(procfs(), 7, m);
  ASSERT_TRUE(fd.ok()) << fd.status().ToString();

  // Another file now at the path (renamed over it): not the mapping's inode.
  const std::string other = dir_ + "/other.so";
  std::ofstream(other) << "another file";
  fs::rename(other, library_);
  fd = OpenMappedFileForProbe(procfs(), 7, m);
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.status().code(), StatusCode::kFailedPrecondition) << fd.status().ToString();

  // A FIFO at the path.
  fs::remove(library_);
  ASSERT_EQ(mkfifo(library_.c_str(), 0666), 0);
  fd = OpenMappedFileForProbe(procfs(), 7, m);
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.status().code(), StatusCode::kFailedPrecondition) << fd.status().ToString();

  // A symbolic link at the path is not followed.
  fs::remove(library_);
  const std::string target = dir_ + "/target.so";
  std::ofstream(target) << "x";
  fs::create_symlink(target, library_);
  fd = OpenMappedFileForProbe(procfs(), 7, Mapping(target, "/lib/libwarpscope_cuda.so"));
  EXPECT_FALSE(fd.ok());

  // Deleted and no map_files: nothing to open.
  MemoryMapping deleted = m;
  deleted.deleted = true;
  fd = OpenMappedFileForProbe(procfs(), 7, deleted);
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace warpscope::gpu
