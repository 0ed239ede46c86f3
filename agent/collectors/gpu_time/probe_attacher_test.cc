// OpenMappedFileForProbe against files a local user controls: a fixture laid
// out like /proc (ProcFs's seam) whose map_files entries and process roots
// point at FIFOs, links and other files.
#include "agent/collectors/gpu_time/probe_attacher.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include "tests/support/wait_for.h"

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

// A gate the stand-in attach waits at for "hung" files (shared with the
// attacher's threads, which may outlive the attacher).
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  std::atomic<int> returned{0};
};

// Processes 7.. each mapping its own libwarpscope_cuda.so (inode = pid).
class ProbeAttacherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ws-probe-attacher-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    {
      std::lock_guard lock(gate_->mu);
      gate_->open = true;
    }
    gate_->cv.notify_all();
    fs::remove_all(dir_);
  }
  void AddProcess(uint32_t pid, uint64_t inode) {
    fs::create_directories(dir_ + "/" + std::to_string(pid));
    std::ofstream(dir_ + "/" + std::to_string(pid) + "/maps")
        << "7f0000001000-7f0000002000 r-xp 00000000 08:01 " << inode << " /lib/libwarpscope_cuda.so\n";
  }
  std::unique_ptr<ProbeAttacher> Make(ProbeAttacherOptions options, std::set<uint64_t> hung) {
    auto gate = gate_;
    return std::make_unique<ProbeAttacher>(
        options, ProcFs(dir_), nullptr,
        [gate, hung](const ProcFs&, uint32_t, const MemoryMapping& m, bool) -> StatusOr<std::vector<uint64_t>> {
          if (hung.count(m.inode) != 0) {
            std::unique_lock lock(gate->mu);
            gate->cv.wait(lock, [&] { return gate->open; });
            ++gate->returned;
          }
          return std::vector<uint64_t>{m.inode};
        });
  }
  bool PollUntil(ProbeAttacher& a, const std::function<bool(const ProbeAttacherStats&)>& done) {
    return testing::WaitFor([&] {
      a.Poll();
      return done(a.stats());
    });
  }

  std::string dir_;
  std::shared_ptr<Gate> gate_ = std::make_shared<Gate>();
};

// An attach that never returns is given up after the timeout, its file is
// not tried again, and a fresh thread probes the next files; after
// max_stuck_threads such attaches, nothing more is probed (counted).
TEST_F(ProbeAttacherTest, AnAttachThatNeverReturnsIsGivenUpAndCounted) {
  ProbeAttacherOptions options;
  options.attach_timeout = std::chrono::milliseconds(200);
  options.max_stuck_threads = 2;
  auto attacher = Make(options, {7, 9});
  for (uint32_t pid : {7, 8, 9, 10, 11}) AddProcess(pid, pid);

  attacher->PostConnected(1, 7);  // hangs
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(PollUntil(*attacher, [](const ProbeAttacherStats& s) { return s.attach_timeouts == 1; }));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(200));
  EXPECT_EQ(attacher->stats().attach_failures, 1u);

  attacher->PostConnected(2, 8);  // a fresh thread attaches it
  ASSERT_TRUE(PollUntil(*attacher, [](const ProbeAttacherStats& s) { return s.files_attached == 1; }));

  attacher->PostConnected(3, 7);  // the hung file again: not tried again
  attacher->Poll();
  EXPECT_EQ(attacher->stats().attach_failures, 2u);
  EXPECT_EQ(attacher->stats().attach_timeouts, 1u);

  attacher->PostConnected(4, 9);  // hangs: the second stuck thread, the last allowed
  ASSERT_TRUE(PollUntil(*attacher, [](const ProbeAttacherStats& s) { return s.attach_timeouts == 2; }));
  attacher->PostConnected(5, 10);
  attacher->Poll();
  EXPECT_EQ(attacher->stats().attaches_dropped, 1u) << "no more attaching after two stuck threads";
  EXPECT_EQ(attacher->stats().files_attached, 1u);

  // The attacher goes (the agent stops) while two threads are stuck: it does
  // not wait for them, and they end safely when their calls return.
  const auto stop = std::chrono::steady_clock::now();
  attacher.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - stop, std::chrono::milliseconds(500));
  {
    std::lock_guard lock(gate_->mu);
    gate_->open = true;
  }
  gate_->cv.notify_all();
  EXPECT_TRUE(testing::WaitFor([&] { return gate_->returned == 2; }));
}

// A file whose processes all left before its attach finished is detached at once.
TEST_F(ProbeAttacherTest, FilesOfProcessesGoneMeanwhileAreNotKept) {
  auto attacher = Make(ProbeAttacherOptions(), {});
  AddProcess(7, 7);
  attacher->PostConnected(1, 7);
  attacher->Disconnected(1);
  ASSERT_TRUE(PollUntil(*attacher, [](const ProbeAttacherStats& s) { return s.files_detached == 1; }));
  EXPECT_EQ(attacher->stats().files_attached, 1u);
}

}  // namespace
}  // namespace warpscope::gpu
