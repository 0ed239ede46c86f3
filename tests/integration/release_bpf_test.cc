// The release tarball (scripts/release.sh) on the oldest glibc it supports:
// a Debian 11 (glibc 2.31) root file system made with debootstrap (cached in
// the build directory: one download, about a minute, on a fresh machine), in
// podman containers started with --rootfs on a copy of it:
//  - bullseye's tar unpacks the tarball;
//  - libwarpscope_cuda.so loads on bullseye's own glibc with every symbol
//    bound at once (LD_BIND_NOW), and ldd -r finds nothing missing;
//  - warpscope-server serves on loopback; `warpscope-agent run` (privileged,
//    host PID namespace) profiles this machine into it, and the query API
//    answers with its samples; both processes are called by their names
//    (comm) though the bundled loader runs them, and the agent finds the CUDA
//    library shipped beside it (--cuda-library-dir);
//  - `warpscope-agent record` writes a profile;
//  - the tarball's install.sh stages the units (DESTDIR) with the release's
//    paths, the staged commands run, and --uninstall removes them.
// Skipped only when there is no cached root file system and deb.debian.org
// cannot be reached.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/server_process.h"
#include "tests/integration/subprocess.h"

namespace warpscope::testing {
namespace {

namespace fs = std::filesystem;

constexpr char kMirror[] = "http://deb.debian.org/debian";
constexpr char kMirrorHost[] = "deb.debian.org";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Whether host:80 accepts a TCP connection within 5 s.
bool Reachable(const char* host) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host, "80", &hints, &found) != 0) return false;
  bool ok = false;
  for (addrinfo* a = found; a != nullptr && !ok; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
      ok = true;
    } else if (errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int err = 0;
      socklen_t len = sizeof err;
      ok = poll(&p, 1, 5000) == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
    }
    close(fd);
  }
  freeaddrinfo(found);
  return ok;
}

// The process (in any container) whose argv[0] is `argv0`, or -1.
pid_t FindProcess(const std::string& argv0) {
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string cmdline = ReadFile(entry.path() / "cmdline");
    if (cmdline.compare(0, argv0.size() + 1, argv0 + '\0') == 0) return std::stoi(name);
  }
  return -1;
}

// What the kernel calls process `pid` (comm, without the newline): at most
// 15 bytes of the executed file's name, "warpscope-serve" for the server as
// for any warpscope-server.
std::string Comm(pid_t pid) {
  std::string comm = ReadFile("/proc/" + std::to_string(pid) + "/comm");
  if (!comm.empty() && comm.back() == '\n') comm.pop_back();
  return comm;
}

class ReleaseTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // The tarball, from the built tree.
    ProcessResult release = RunProcess({WS_RELEASE_SCRIPT, "--build", WS_BUILD_DIR}, 300);
    if (release.exit_code != 0) {
      setup_error_ = "release.sh failed: " + release.err + release.out;
      return;
    }
    const size_t at = release.out.rfind("release.sh: ");
    const size_t end = release.out.find(" (", at);
    if (at == std::string::npos || end == std::string::npos) {
      setup_error_ = "release.sh said no tarball: " + release.out;
      return;
    }
    tarball_ = fs::absolute(release.out.substr(at + 12, end - at - 12)).string();
    name_ = fs::path(tarball_).filename().string();
    name_ = name_.substr(0, name_.size() - std::string(".tar.gz").size());
    tree_ = "/opt/" + name_;

    // Debian 11, made once and kept in the build directory.
    const std::string cache = std::string(WS_BUILD_DIR) + "/release-test/debian11-rootfs";
    if (!fs::exists(cache + "/etc/debian_version")) {
      if (access("/usr/sbin/debootstrap", X_OK) != 0) {
        setup_error_ = "/usr/sbin/debootstrap is missing (Debian package debootstrap, scripts/debian-packages.txt)";
        return;
      }
      if (!Reachable(kMirrorHost)) {
        skip_ = std::string("no cached Debian 11 root file system and ") + kMirrorHost + " cannot be reached";
        return;
      }
      const std::string tmp = cache + ".tmp";
      RunProcess({"/bin/rm", "-rf", tmp});
      fs::create_directories(fs::path(cache).parent_path());
      ProcessResult boot =
          RunProcess({"/usr/sbin/debootstrap", "--variant=minbase", "bullseye", tmp, kMirror}, 900);
      if (boot.exit_code != 0 || !fs::exists(tmp + "/etc/debian_version")) {
        setup_error_ = "debootstrap bullseye failed: " + boot.err + boot.out;
        return;
      }
      fs::rename(tmp, cache);
    }
    const std::string debian_version = ReadFile(cache + "/etc/debian_version");
    if (debian_version.rfind("11.", 0) != 0) {
      setup_error_ = cache + " is not Debian 11: " + debian_version;
      return;
    }

    // podman as this sandbox allows it (runc; rlimits within the hard limits)
    // unless the caller chose a configuration.
    work_ = MakeTempDir();
    if (getenv("CONTAINERS_CONF") == nullptr) {
      const std::string nofile = std::to_string(HardNofile());
      std::ofstream(work_ + "/containers.conf")
          << "[containers]\ndefault_ulimits = [\"nofile=" << nofile << ":" << nofile
          << "\", \"nproc=32768:32768\"]\n[engine]\nruntime = \"runc\"\n";
      setenv("CONTAINERS_CONF", (work_ + "/containers.conf").c_str(), 1);
    }
    if (access("/usr/bin/podman", X_OK) != 0) {
      setup_error_ = "/usr/bin/podman is missing (Debian package podman, scripts/debian-packages.txt)";
      return;
    }

    // This run's copy of the root file system; bullseye's tar unpacks the tarball in it.
    rootfs_ = work_ + "/rootfs";
    ProcessResult copy = RunProcess({"/bin/cp", "-a", cache, rootfs_});
    if (copy.exit_code != 0) {
      setup_error_ = "cp -a " + cache + ": " + copy.err;
      return;
    }
    ProcessResult unpack = Podman({"-v", fs::path(tarball_).parent_path().string() + ":/release:ro"},
                                  {"tar", "-C", "/opt", "-xzf", "/release/" + name_ + ".tar.gz"});
    if (unpack.exit_code != 0) setup_error_ = "tar in the container: " + unpack.err;
  }

  static void TearDownTestSuite() {
    if (!work_.empty()) RunProcess({"/bin/rm", "-rf", work_});
  }

  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    ASSERT_EQ(setup_error_, "");
  }

  void TearDown() override {
    for (auto& [pid, container] : running_) {
      kill(pid, SIGKILL);
      WaitProcess(pid);
      RunProcess({"/usr/bin/podman", "rm", "-f", "-t", "0", container});
    }
  }

  static long HardNofile() {
    rlimit r{};
    getrlimit(RLIMIT_NOFILE, &r);
    return r.rlim_max == RLIM_INFINITY ? 1048576 : static_cast<long>(r.rlim_max);
  }

  // `podman run` of argv in the Debian 11 root file system, on the host's network.
  static std::vector<std::string> PodmanArgv(const std::vector<std::string>& options,
                                             const std::vector<std::string>& argv) {
    std::vector<std::string> all = {"/usr/bin/podman", "run", "--rm", "--pull=never", "--network=host"};
    all.insert(all.end(), options.begin(), options.end());
    all.insert(all.end(), {"--rootfs", rootfs_});
    all.insert(all.end(), argv.begin(), argv.end());
    return all;
  }
  static ProcessResult Podman(const std::vector<std::string>& options, const std::vector<std::string>& argv) {
    return RunProcess(PodmanArgv(options, argv));
  }
  // The same in the background, in a container named `container`.
  pid_t StartPodman(const std::string& container, const std::vector<std::string>& options,
                    const std::vector<std::string>& argv, const std::string& log) {
    std::vector<std::string> named = {"--name", container};
    named.insert(named.end(), options.begin(), options.end());
    const pid_t pid = StartProcess(PodmanArgv(named, argv), log);
    running_.push_back({pid, container});
    return pid;
  }
  // SIGTERM through podman (it passes signals on); the exit code.
  int Stop(pid_t pid) {
    kill(pid, SIGTERM);
    const int code = WaitProcess(pid);
    std::erase_if(running_, [pid](const auto& r) { return r.first == pid; });
    return code;
  }

  static std::string InRoot(const std::string& path) { return rootfs_ + path; }
  std::string Bin(const std::string& program) const { return tree_ + "/bin/" + program; }

  void CudaLibraryLoadsOnGlibc231();
  void ServerServesAndAgentProfilesIntoIt();
  void AgentRecords();
  void InstallScriptStagesTheRelease();

  static inline std::string setup_error_, skip_, tarball_, name_, tree_, work_, rootfs_;
  std::vector<std::pair<pid_t, std::string>> running_;
};

void ReleaseTest::CudaLibraryLoadsOnGlibc231() {
  const std::string lib = tree_ + "/lib/warpscope/libwarpscope_cuda.so";
  ProcessResult r = Podman({}, {"/bin/sh", "-c",
                                "ldd --version | head -n1; ldd -r " + lib + " 2>&1; LD_BIND_NOW=1 LD_PRELOAD=" + lib +
                                    " /bin/true && echo preloaded"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("GLIBC 2.31"), std::string::npos) << r.out;  // bullseye's own glibc
  EXPECT_NE(r.out.find("libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("libpthread.so.0 => /lib/x86_64-linux-gnu/libpthread.so.0"), std::string::npos) << r.out;
  for (const char* bad : {"not found", "undefined symbol", "version `GLIBC"}) {
    EXPECT_EQ(r.out.find(bad), std::string::npos) << bad << " in:\n" << r.out;
  }
  EXPECT_EQ(r.err.find("ERROR"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("preloaded"), std::string::npos) << r.out << r.err;
}

void ReleaseTest::ServerServesAndAgentProfilesIntoIt() {
  ProcessResult version = Podman({}, {Bin("warpscope-agent"), "--version"});
  ASSERT_EQ(version.exit_code, 0) << version.err;
  EXPECT_EQ(version.out.rfind("warpscope-agent ", 0), 0u) << version.out;
  EXPECT_NE(name_.find(version.out.substr(16, version.out.find('\n') - 16)), std::string::npos) << version.out;

  const int port = FreePort();
  const std::string id = std::to_string(getpid());
  const pid_t server = StartPodman("ws-release-server-" + id, {},
                                   {Bin("warpscope-server"), "--listen", "127.0.0.1:" + std::to_string(port),
                                    "--data-dir", "/var/lib/warpscope"},
                                   work_ + "/server.log");
  bool serving = false;
  for (int i = 0; i < 300 && !serving; ++i) {
    serving = HttpGet(port, "/healthz").status == 200;
    if (!serving) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(serving) << ReadFile(work_ + "/server.log");
  const pid_t server_process = FindProcess(tree_ + "/libexec/warpscope-server");
  ASSERT_GT(server_process, 0);
  EXPECT_EQ(Comm(server_process), std::string("warpscope-server").substr(0, 15));

  fs::create_directories(InRoot("/run/warpscope"));
  const pid_t agent = StartPodman(
      "ws-release-agent-" + id, {"--privileged", "--pid=host"},
      {Bin("warpscope-agent"), "run", "--server", "http://127.0.0.1:" + std::to_string(port), "--upload-interval", "1s",
       "--node-name", "release-test", "--no-gpu-metrics", "--state-dir", "/var/lib/warpscope-agent", "--cuda-socket",
       "/run/warpscope/cuda.sock", "--cuda-library-dir", "/run/warpscope"},
      work_ + "/agent.log");
  uint64_t samples = 0;
  for (int i = 0; i < 120 && samples == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    HttpResult top = HttpGet(port, "/api/v1/top?from=now-5m&limit=5&selector=" + UrlEncode("{node=\"release-test\"}"));
    nlohmann::json j = nlohmann::json::parse(top.body, nullptr, false);
    if (top.status == 200 && j.is_object() && j["total"].is_number()) samples = j["total"].get<uint64_t>();
  }
  EXPECT_GT(samples, 0u) << ReadFile(work_ + "/agent.log");
  const pid_t agent_process = FindProcess(tree_ + "/libexec/warpscope-agent");
  ASSERT_GT(agent_process, 0);
  EXPECT_EQ(Comm(agent_process), "warpscope-agent");
  const std::string exe = fs::read_symlink("/proc/" + std::to_string(agent_process) + "/exe").string();
  EXPECT_NE(exe.find("/libexec/warpscope-agent"), std::string::npos) << exe;
  // The agent found the library shipped beside it, through /proc/self/exe.
  EXPECT_EQ(ReadFile(InRoot("/run/warpscope/libwarpscope_cuda.so")),
            ReadFile(InRoot(tree_ + "/lib/warpscope/libwarpscope_cuda.so")));
  EXPECT_TRUE(fs::exists(InRoot("/run/warpscope/cuda.sock")));

  EXPECT_EQ(Stop(agent), 0) << ReadFile(work_ + "/agent.log");
  EXPECT_EQ(Stop(server), 0) << ReadFile(work_ + "/server.log");
}

void ReleaseTest::AgentRecords() {
  // A busy bullseye bash beside the agent: its stacks must be in the profile.
  ProcessResult r = Podman({"--privileged", "--pid=host"},
                           {"/bin/bash", "-c",
                            "bash -c 'while :; do :; done' & busy=$!; " + Bin("warpscope-agent") +
                                " record --all --duration 2s --format collapsed --output /tmp/cpu.folded; rc=$?; "
                                "kill $busy; exit $rc"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string folded = ReadFile(InRoot("/tmp/cpu.folded"));
  EXPECT_GT(std::count(folded.begin(), folded.end(), '\n'), 0);
  EXPECT_TRUE(folded.rfind("bash;", 0) == 0 || folded.find("\nbash;") != std::string::npos) << folded;
}

void ReleaseTest::InstallScriptStagesTheRelease() {
  ProcessResult install = Podman({}, {"/usr/bin/env", "DESTDIR=/stage", tree_ + "/scripts/install.sh"});
  ASSERT_EQ(install.exit_code, 0) << install.out << install.err;
  EXPECT_NE(install.out.find("CUDA_INJECTION64_PATH=/usr/local/lib/warpscope/libwarpscope_cuda.so"), std::string::npos)
      << install.out;
  for (const char* path :
       {"/usr/local/bin/warpscope-agent", "/usr/local/bin/warpscope-server", "/usr/local/libexec/warpscope-agent",
        "/usr/local/libexec/warpscope-server", "/usr/local/lib/warpscope/bin/warpscope-agent",
        "/usr/local/lib/warpscope/runtime/libc.so.6", "/usr/local/lib/warpscope/libwarpscope_cuda.so",
        "/etc/default/warpscope-server", "/etc/default/warpscope-agent"}) {
    EXPECT_TRUE(fs::exists(InRoot(std::string("/stage") + path))) << path;
  }
  EXPECT_EQ(access(InRoot("/stage/usr/local/libexec/warpscope-agent").c_str(), X_OK), 0);
  for (const std::string service : {"warpscope-server", "warpscope-agent"}) {
    const std::string unit = ReadFile(InRoot("/stage/etc/systemd/system/" + service + ".service"));
    EXPECT_NE(unit.find("\nExecStart=/usr/local/bin/" + service + " "), std::string::npos) << unit;
  }
  // The staged commands run from where they are.
  ProcessResult staged = Podman({}, {"/stage/usr/local/bin/warpscope-agent", "--version"});
  EXPECT_EQ(staged.exit_code, 0) << staged.err;
  EXPECT_EQ(staged.out.rfind("warpscope-agent ", 0), 0u) << staged.out;
  staged = Podman({}, {"/stage/usr/local/bin/warpscope-server", "--help"});
  EXPECT_EQ(staged.exit_code, 0) << staged.err;

  ProcessResult uninstall = Podman({}, {"/usr/bin/env", "DESTDIR=/stage", tree_ + "/scripts/install.sh", "--uninstall"});
  ASSERT_EQ(uninstall.exit_code, 0) << uninstall.err;
  for (const char* path : {"/usr/local/bin/warpscope-agent", "/usr/local/libexec", "/usr/local/lib/warpscope",
                           "/etc/systemd/system/warpscope-agent.service"}) {
    EXPECT_FALSE(fs::exists(InRoot(std::string("/stage") + path))) << path;
  }
  EXPECT_TRUE(fs::exists(InRoot("/stage/etc/default/warpscope-agent")));
}

// One test (one process, under CTest): the tarball and its Debian 11 root file
// system are made once; each part runs even when an earlier one failed.
TEST_F(ReleaseTest, RunsOnDebian11) {
  {
    SCOPED_TRACE("libwarpscope_cuda.so on glibc 2.31");
    CudaLibraryLoadsOnGlibc231();
  }
  {
    SCOPED_TRACE("warpscope-server and warpscope-agent run");
    ServerServesAndAgentProfilesIntoIt();
  }
  {
    SCOPED_TRACE("warpscope-agent record");
    AgentRecords();
  }
  {
    SCOPED_TRACE("install.sh from the tarball");
    InstallScriptStagesTheRelease();
  }
}

}  // namespace
}  // namespace warpscope::testing
