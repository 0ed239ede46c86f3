// GpuTimeCollector with its real parts: the uprobe_stack BPF program in the
// kernel, the CUDA socket, and processes that map a library exporting the
// launch probe (a stand-in for libwarpscope_cuda.so, copied so that each
// process maps a file of its own, as any local user could arrange).
// Needs root.
#include "agent/collectors/gpu_time/gpu_time_collector.h"

#include <dirent.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include "agent/collectors/gpu_time/socket/cuda_wire_decoder.h"

namespace warpscope::gpu {
namespace {

using std::chrono::milliseconds;

// Each attached uprobe is one perf event fd of this process.
size_t PerfEventFds() {
  size_t n = 0;
  DIR* d = opendir("/proc/self/fd");
  while (dirent* e = readdir(d)) {
    char target[64] = {};
    const std::string path = std::string("/proc/self/fd/") + e->d_name;
    if (readlink(path.c_str(), target, sizeof(target) - 1) > 0 && std::strcmp(target, "anon_inode:[perf_event]") == 0) {
      ++n;
    }
  }
  closedir(d);
  return n;
}

// A CUDA process stand-in, forked before the collector starts any thread: it
// maps `library`, and once told (a byte on its pipe) connects to the socket
// with HELLO; it exits when the pipe closes. No gtest in the child.
struct Child {
  pid_t pid = -1;
  int control_fd = -1;  // parent's end: write a byte to connect, close to end it

  static Child Fork(const std::string& library, const std::string& socket_path) {
    int fds[2];
    EXPECT_EQ(pipe(fds), 0);
    const pid_t pid = fork();
    if (pid == 0) {
      for (int fd = 3; fd < 4096; ++fd) {
        if (fd != fds[0]) close(fd);
      }
      if (dlopen(library.c_str(), RTLD_NOW) == nullptr) _exit(10);
      char c;
      if (read(fds[0], &c, 1) != 1) _exit(0);
      const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
      sockaddr_un addr{};
      addr.sun_family = AF_UNIX;
      std::strcpy(addr.sun_path, socket_path.c_str());
      if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) _exit(11);
      ws_cuda_hello hello{};
      hello.pid = static_cast<uint32_t>(getpid());
      hello.connection_seq = 1;
      hello.max_message_bytes = WS_CUDA_WIRE_MAX_MESSAGE;
      const std::vector<uint8_t> bytes = EncodeCudaMessage(WS_CUDA_MSG_HELLO, &hello, sizeof(hello), 1);
      if (send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(bytes.size())) _exit(12);
      ws_cuda_kernel kernel{};  // one record, so the parent can tell it was taken in
      const std::vector<uint8_t> record = EncodeCudaMessage(WS_CUDA_MSG_KERNELS, &kernel, sizeof(kernel), 1);
      if (send(fd, record.data(), record.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(record.size())) _exit(13);
      (void)!read(fds[0], &c, 1);  // EOF: done
      _exit(0);
    }
    close(fds[0]);
    return {pid, fds[1]};
  }
  void Connect() const { EXPECT_EQ(write(control_fd, "x", 1), 1); }
  void End() {
    close(control_fd);
    int status = 0;
    EXPECT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
};

class GpuTimeCollectorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(geteuid(), 0u) << "needs root (BPF)";
    char tmpl[] = "/tmp/ws-gpu-time-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ASSERT_EQ(chmod(dir_.c_str(), 0755), 0);
    auto maps = UprobeStackCollector::Create(1, ComputeUnwindMapSizes(8u << 20));
    ASSERT_TRUE(maps.ok()) << maps.status().ToString();
    unwind_owner_ = std::move(maps).value();
  }
  void TearDown() override {
    collector_.reset();
    std::filesystem::remove_all(dir_);
  }
  // A copy of the probe library of its own (its own inode) for process `i`.
  std::string LibraryCopy(int i) {
    const std::string dir = dir_ + "/lib" + std::to_string(i);
    std::filesystem::create_directories(dir);
    const std::string path = dir + "/libwarpscope_cuda.so";
    std::filesystem::copy_file(WS_PROBE_LIBRARY_PATH, path);
    return path;
  }
  std::string SocketPath() const { return dir_ + "/cuda.sock"; }
  void Start(GpuTimeOptions options) {
    options.socket.socket_path = SocketPath();
    GpuTimeSessionParts parts;
    parts.symbolizer = &symbolizer_;
    parts.unwind_maps = unwind_owner_->unwind_map_fds();
    auto c = GpuTimeCollector::Open(options, std::move(parts));
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    collector_ = std::move(c).value();
  }
  // Polls the collector (as the sampling thread does) until `done` holds.
  template <typename Pred>
  bool PollUntil(Pred done) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < end) {
      collector_->Poll();
      if (done(collector_->stats())) return true;
      std::this_thread::sleep_for(milliseconds(10));
    }
    return false;
  }
  void FinishWindow() {
    ProfileBuilder builder(0, 0, 0);
    GpuTrace trace;
    collector_->FinishWindow(&builder, &trace, false);
  }

  std::string dir_;
  Symbolizer symbolizer_{ProcFs()};
  std::unique_ptr<UprobeStackCollector> unwind_owner_;  // owns the unwinder maps the collector shares
  std::unique_ptr<GpuTimeCollector> collector_;
};

// Any local user can make a file named libwarpscope_cuda.so that exports the
// probe and connect from a process that maps it. The root agent probes at
// most max_probe_files such files at once (16 by default), counts the rest,
// and detaches a file's probe once no connected process maps it; a process
// refused for the bound is probed when room is made.
TEST_F(GpuTimeCollectorTest, ProbedLibraryFilesAreBoundedAndDetachedWhenNoProcessUsesThem) {
  constexpr int kProcesses = 20;
  std::vector<Child> children;
  for (int i = 0; i < kProcesses; ++i) children.push_back(Child::Fork(LibraryCopy(i), SocketPath()));
  const size_t baseline = PerfEventFds();
  Start(GpuTimeOptions());

  for (Child& c : children) {
    c.Connect();
    const uint64_t before = collector_->stats().probe_files_attached + collector_->stats().probe_files_refused;
    ASSERT_TRUE(PollUntil([&](const GpuTimeStats& s) {
      return s.probe_files_attached + s.probe_files_refused == before + 1;
    })) << "connection " << &c - children.data();
  }
  GpuTimeStats s = collector_->stats();
  EXPECT_EQ(s.probe_files_attached, 16u);
  EXPECT_EQ(s.probe_files_refused, 4u);
  EXPECT_EQ(s.probe_attach_failures, 0u);
  EXPECT_EQ(PerfEventFds() - baseline, 16u) << "one uprobe per probed file";

  // The probed processes exit: their files' probes go.
  for (int i = 0; i < 16; ++i) children[i].End();
  ASSERT_TRUE(PollUntil([](const GpuTimeStats& s) { return s.probe_files_detached == 16; }));
  EXPECT_EQ(PerfEventFds(), baseline);

  // Room again: the processes refused before get their probes from the window's end on.
  FinishWindow();
  ASSERT_TRUE(PollUntil([](const GpuTimeStats& s) { return s.probe_files_attached == 20; }));
  EXPECT_EQ(PerfEventFds() - baseline, 4u);
  for (int i = 16; i < kProcesses; ++i) children[i].End();
  ASSERT_TRUE(PollUntil([](const GpuTimeStats& s) { return s.probe_files_detached == 20; }));
  EXPECT_EQ(PerfEventFds(), baseline);
}

// Two processes mapping the same file share one probe, kept until both are gone.
TEST_F(GpuTimeCollectorTest, OneProbePerFileWhileAnyConnectedProcessMapsIt) {
  const std::string library = LibraryCopy(0);
  Child first = Child::Fork(library, SocketPath());
  Child second = Child::Fork(library, SocketPath());
  const size_t baseline = PerfEventFds();
  GpuTimeOptions options;
  options.socket.config.mode = WS_CUDA_MODE_EXACT;  // records go straight to the joiner
  Start(options);
  first.Connect();
  second.Connect();
  ASSERT_TRUE(PollUntil([&](const GpuTimeStats&) { return collector_->join_stats().kernels == 2; }))
      << "both connections taken in";
  // Probes are attached on the attacher's thread: the file's one probe comes soon after.
  ASSERT_TRUE(PollUntil([](const GpuTimeStats& s) { return s.probe_files_attached == 1; }));
  EXPECT_EQ(PerfEventFds(), baseline + 1);
  first.End();
  for (int i = 0; i < 20; ++i) {
    collector_->Poll();
    std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_EQ(collector_->stats().probe_files_detached, 0u);
  EXPECT_EQ(PerfEventFds(), baseline + 1);
  second.End();
  ASSERT_TRUE(PollUntil([](const GpuTimeStats& s) { return s.probe_files_detached == 1; }));
  EXPECT_EQ(collector_->stats().probe_files_attached, 1u);
  EXPECT_EQ(PerfEventFds(), baseline);
}

}  // namespace
}  // namespace warpscope::gpu
