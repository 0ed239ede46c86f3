#include "agent/process/container_labels.h"

#include <gtest/gtest.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "agent/process/node_name.h"
#include "agent/process/proc_fs.h"

namespace warpscope {
namespace {

// Container ids and pod uids used across the fixtures. kPodUid is the dashed
// form Kubernetes shows; kPodUidSlice is how the systemd driver writes it.
#define ID_A "f8f657ac3402b1d8cab319ae1bab541059bd452bed161ef460a7e3c87178fdb2"
#define ID_B "145655f843aaf750904fe15afd6d919052347e6ad52d92ebcc49ef142ef847c6"
#define POD_UID "8f2c1a3e-9b4d-4e1a-a0c2-5d7e3b9c1f40"
#define POD_UID_SLICE "8f2c1a3e_9b4d_4e1a_a0c2_5d7e3b9c1f40"
#define STATIC_POD_UID "5c7109a1670823c56e9470ea5c5d2a98"

// A cgroup v1 host with every controller at `path` and the unified hierarchy
// (hybrid mode) showing `v2`, as systemd hosts before cgroup v2 write it.
std::string V1File(const std::string& path, const std::string& v2 = "/") {
  return "12:pids:" + path + "\n11:hugetlb:" + path + "\n10:net_cls,net_prio:" + path +
         "\n9:perf_event:" + path + "\n8:blkio:" + path + "\n7:cpuset:" + path + "\n6:devices:" + path +
         "\n5:freezer:" + path + "\n4:memory:" + path + "\n3:cpu,cpuacct:" + path + "\n2:rdma:/\n1:name=systemd:" +
         path + "\n0::" + v2 + "\n";
}
std::string V2File(const std::string& path) { return "0::" + path + "\n"; }

struct CgroupCase {
  std::string name;
  std::string text;
  ContainerInfo want;
};

void PrintTo(const CgroupCase& c, std::ostream* os) { *os << c.name; }

const ContainerInfo kHost{};

std::vector<CgroupCase> Cases() {
  return {
      // --- docker ---
      {"DockerCgroupfsV1", V1File("/docker/" ID_A, "/system.slice/containerd.service"), {ID_A, "docker", "", ""}},
      {"DockerCgroupfsV2", V2File("/docker/" ID_A), {ID_A, "docker", "", ""}},
      {"DockerSystemdV1", V1File("/system.slice/docker-" ID_A ".scope"), {ID_A, "docker", "", ""}},
      {"DockerSystemdV2", V2File("/system.slice/docker-" ID_A ".scope"), {ID_A, "docker", "", ""}},
      {"DockerSystemdInsideContainer", V2File("/system.slice/docker-" ID_A ".scope/init.scope"),
       {ID_A, "docker", "", ""}},
      {"DockerRootless",
       V2File("/user.slice/user-1000.slice/user@1000.service/docker.service/docker/" ID_A),
       {ID_A, "docker", "", ""}},
      // --- containerd / CRI ---
      {"ContainerdCgroupfsBurstableV1", V1File("/kubepods/burstable/pod" POD_UID "/" ID_A),
       {ID_A, "containerd", POD_UID, "burstable"}},
      {"ContainerdSystemdBurstableV2",
       V2File("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" POD_UID_SLICE
              ".slice/cri-containerd-" ID_A ".scope"),
       {ID_A, "containerd", POD_UID, "burstable"}},
      {"ContainerdSystemdBurstableV1",
       V1File("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" POD_UID_SLICE
              ".slice/cri-containerd-" ID_A ".scope"),
       {ID_A, "containerd", POD_UID, "burstable"}},
      {"NerdctlSystemdV2", V2File("/system.slice/nerdctl-" ID_A ".scope"), {ID_A, "containerd", "", ""}},
      // --- cri-o ---
      {"CrioSystemdBesteffortV2",
       V2File("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" POD_UID_SLICE
              ".slice/crio-" ID_A ".scope"),
       {ID_A, "cri-o", POD_UID, "besteffort"}},
      {"CrioCgroupfsBurstableV1", V1File("/kubepods/burstable/pod" POD_UID "/crio-" ID_A),
       {ID_A, "cri-o", POD_UID, "burstable"}},
      {"CrioConmonIsNotTheContainer",
       V2File("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" POD_UID_SLICE
              ".slice/crio-conmon-" ID_A ".scope"),
       {"", "", POD_UID, "burstable"}},
      // --- podman ---
      {"PodmanRootfulV2", V2File("/machine.slice/libpod-" ID_A ".scope"), {ID_A, "podman", "", ""}},
      {"PodmanSystemdInContainerV2", V2File("/machine.slice/libpod-" ID_A ".scope/container"),
       {ID_A, "podman", "", ""}},
      {"PodmanRootlessV2",
       V2File("/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID_A ".scope"),
       {ID_A, "podman", "", ""}},
      {"PodmanCgroupfsV1", V1File("/libpod_parent/libpod-" ID_A), {ID_A, "podman", "", ""}},
      {"PodmanConmonIsNotTheContainer", V2File("/machine.slice/libpod-conmon-" ID_A ".scope"), kHost},
      // --- QoS classes ---
      {"GuaranteedCgroupfsV1", V1File("/kubepods/pod" POD_UID "/" ID_A), {ID_A, "containerd", POD_UID, "guaranteed"}},
      {"GuaranteedSystemdV2",
       V2File("/kubepods.slice/kubepods-pod" POD_UID_SLICE ".slice/cri-containerd-" ID_A ".scope"),
       {ID_A, "containerd", POD_UID, "guaranteed"}},
      {"BesteffortCgroupfsV2", V2File("/kubepods/besteffort/pod" POD_UID "/" ID_A),
       {ID_A, "containerd", POD_UID, "besteffort"}},
      {"StaticPodUidHasNoDashes",
       V2File("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" STATIC_POD_UID
              ".slice/cri-containerd-" ID_A ".scope"),
       {ID_A, "containerd", STATIC_POD_UID, "burstable"}},
      {"PodLevelCgroupWithoutContainer",
       V2File("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" POD_UID_SLICE ".slice"),
       {"", "", POD_UID, "burstable"}},
      // --- nested: innermost container wins ---
      {"KindSystemdV2",
       V2File("/system.slice/docker-" ID_B ".scope/kubelet.slice/kubelet-kubepods.slice/"
              "kubelet-kubepods-burstable.slice/kubelet-kubepods-burstable-pod" POD_UID_SLICE
              ".slice/cri-containerd-" ID_A ".scope"),
       {ID_A, "containerd", POD_UID, "burstable"}},
      {"KindCgroupfsV1", V1File("/docker/" ID_B "/kubelet/kubepods/besteffort/pod" POD_UID "/" ID_A),
       {ID_A, "containerd", POD_UID, "besteffort"}},
      {"KindNodeItself", V2File("/system.slice/docker-" ID_B ".scope/kubelet.slice/kubelet.service"),
       {ID_B, "docker", "", ""}},
      {"DockerInDockerV1", V1File("/docker/" ID_B "/docker/" ID_A), {ID_A, "docker", "", ""}},
      {"DockerInDockerInPodV1", V1File("/kubepods/burstable/pod" POD_UID "/" ID_B "/docker/" ID_A),
       {ID_A, "docker", POD_UID, "burstable"}},
      // --- lxc ---
      {"LxcPayloadV2", V2File("/lxc.payload.web01"), {"web01", "lxc", "", ""}},
      {"LxcPayloadSystemdInsideV2", V2File("/lxc.payload.web01/system.slice/nginx.service"), {"web01", "lxc", "", ""}},
      {"LxcLegacyV1", V1File("/lxc/web01"), {"web01", "lxc", "", ""}},
      {"LxcMonitorIsNotTheContainer", V2File("/lxc.monitor.web01"), kHost},
      // --- other runtimes: the id is known, the runtime is not ---
      {"EcsBareIdV1", V1File("/ecs/" STATIC_POD_UID "/" ID_A), {ID_A, "", "", ""}},
      // --- host processes and junk ---
      {"HostUserSessionV2", V2File("/user.slice/user-1000.slice/session-3.scope"), kHost},
      {"HostInitScopeV2", V2File("/init.scope"), kHost},
      {"HostSshdV2", V2File("/system.slice/sshd.service"), kHost},
      {"HostRootV2", V2File("/"), kHost},
      {"HostV1", V1File("/user.slice/user-1000.slice/session-3.scope", "/user.slice/user-1000.slice/session-3.scope"),
       kHost},
      {"HostKubeletServiceV2", V2File("/system.slice/kubelet.service"), kHost},
      {"Empty", "", kHost},
      {"Garbage", "garbage\n:::\n0\n\n12:pids\n", kHost},
      {"UppercaseIdIsNotAnId", V2File("/docker/" "F8F657AC3402B1D8CAB319AE1BAB541059BD452BED161EF460A7E3C87178FDB2"),
       kHost},
      {"ShortIdIsNotAnId", V2File("/docker/f8f657ac3402"), kHost},
      {"PodmanComponentIsNotAPod", V2File("/kubepods/podman/x"), kHost},
      {"UnknownSandboxLayout",  // as seen on a CI sandbox: only memory is delegated
       "9:name=systemd:/\n8:pids:/\n7:blkio:/\n6:freezer:/\n5:devices:/\n4:memory:/process_api/" STATIC_POD_UID
       "\n3:cpuset:/\n2:cpuacct:/\n1:cpu:/\n0::/\n",
       kHost},
      // --- choosing among hierarchies ---
      {"V2PreferredOverV1", "4:memory:/docker/" ID_B "\n0::/system.slice/docker-" ID_A ".scope\n",
       {ID_A, "docker", "", ""}},
      {"HybridFallsBackToPids", "12:pids:/docker/" ID_A "\n4:memory:/docker/" ID_B "\n0::/\n",
       {ID_A, "docker", "", ""}},
      {"MemoryBeforeCpu", "3:cpuacct,cpu:/docker/" ID_B "\n4:memory:/docker/" ID_A "\n", {ID_A, "docker", "", ""}},
      {"CpuOnly", "3:cpuacct,cpu:/docker/" ID_A "\n", {ID_A, "docker", "", ""}},
      {"NameSystemdOnly", "1:name=systemd:/system.slice/docker-" ID_A ".scope\n2:freezer:/\n",
       {ID_A, "docker", "", ""}},
      {"IgnoresOtherV1Controllers", "7:cpuset:/docker/" ID_A "\n8:blkio:/docker/" ID_A "\n", kHost},
      {"NoTrailingNewline", "0::/docker/" ID_A, {ID_A, "docker", "", ""}},
  };
}

class CgroupShapeTest : public ::testing::TestWithParam<CgroupCase> {};

TEST_P(CgroupShapeTest, Parses) {
  const CgroupCase& c = GetParam();
  const ContainerInfo got = ParseCgroupFile(c.text);
  EXPECT_EQ(got.container_id, c.want.container_id);
  EXPECT_EQ(got.runtime, c.want.runtime);
  EXPECT_EQ(got.pod_uid, c.want.pod_uid);
  EXPECT_EQ(got.qos_class, c.want.qos_class);
}

INSTANTIATE_TEST_SUITE_P(AllShapes, CgroupShapeTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<CgroupCase>& info) { return info.param.name; });

TEST(ParseCgroupPathTest, SinglePath) {
  EXPECT_EQ(ParseCgroupPath("/kubepods/burstable/pod" POD_UID "/" ID_A),
            (ContainerInfo{ID_A, "containerd", POD_UID, "burstable"}));
  EXPECT_EQ(ParseCgroupPath(""), ContainerInfo{});
  EXPECT_EQ(ParseCgroupPath("////"), ContainerInfo{});
}

class CgroupFixtureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ws_container_labels_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  void Write(const std::string& rel, const std::string& text) {
    const std::filesystem::path p = std::filesystem::path(root_) / rel;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  std::string root_;
};

TEST_F(CgroupFixtureTest, ReadCgroupFromFixture) {
  const std::string text = V1File("/kubepods/burstable/pod" POD_UID "/" ID_A);
  Write("42/cgroup", text);
  ProcFs procfs(root_);
  StatusOr<std::string> got = procfs.ReadCgroup(42);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, text);
  EXPECT_EQ(ParseCgroupFile(*got), (ContainerInfo{ID_A, "containerd", POD_UID, "burstable"}));
}

TEST_F(CgroupFixtureTest, VanishedProcessIsNotFound) {
  ProcFs procfs(root_);
  StatusOr<std::string> got = procfs.ReadCgroup(43);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kNotFound);
  StatusOr<std::string> comm = procfs.ReadThreadComm(43, 44);
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), StatusCode::kNotFound);
}

TEST_F(CgroupFixtureTest, ReadThreadCommFromFixture) {
  Write("42/task/42/comm", "python3\n");
  Write("42/task/47/comm", "pt_autograd_0\n");
  ProcFs procfs(root_);
  StatusOr<std::string> main_thread = procfs.ReadThreadComm(42, 42);
  ASSERT_TRUE(main_thread.ok()) << main_thread.status().ToString();
  EXPECT_EQ(*main_thread, "python3");
  StatusOr<std::string> worker = procfs.ReadThreadComm(42, 47);
  ASSERT_TRUE(worker.ok()) << worker.status().ToString();
  EXPECT_EQ(*worker, "pt_autograd_0");
  StatusOr<std::string> gone = procfs.ReadThreadComm(42, 48);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.status().code(), StatusCode::kNotFound);
}

// Wherever the test runs (host, docker, CI sandbox) the real file must read
// and parse; the labels may legitimately be empty.
TEST(RealProcTest, SelfCgroupReadsAndParses) {
  ProcFs procfs;
  StatusOr<std::string> text = procfs.ReadCgroup(static_cast<uint32_t>(getpid()));
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_FALSE(text->empty());
  const ContainerInfo info = ParseCgroupFile(*text);
  if (info.pod_uid.empty()) {
    EXPECT_EQ(info.qos_class, "");
  }
  RecordProperty("container_id", info.container_id);
  RecordProperty("runtime", info.runtime);
}

TEST(RealProcTest, ThreadCommOfNamedThread) {
  ProcFs procfs;
  const uint32_t pid = static_cast<uint32_t>(getpid());
  StatusOr<std::string> main_comm = procfs.ReadThreadComm(pid, pid);
  ASSERT_TRUE(main_comm.ok()) << main_comm.status().ToString();
  EXPECT_EQ(*main_comm, std::string("container_labels_test").substr(0, 15));

  std::atomic<uint32_t> tid{0};
  std::atomic<bool> done{false};
  std::thread worker([&] {
    pthread_setname_np(pthread_self(), "ws-worker");
    tid = static_cast<uint32_t>(::syscall(SYS_gettid));
    while (!done) std::this_thread::yield();
  });
  while (tid == 0) std::this_thread::yield();
  StatusOr<std::string> comm = procfs.ReadThreadComm(pid, tid);
  done = true;
  worker.join();
  ASSERT_TRUE(comm.ok()) << comm.status().ToString();
  EXPECT_EQ(*comm, "ws-worker");
}

TEST(NodeNameTest, OverrideWins) { EXPECT_EQ(NodeName("gpu-node-17"), "gpu-node-17"); }

TEST(NodeNameTest, FallsBackToHostname) {
  char host[HOST_NAME_MAX + 1] = {};
  ASSERT_EQ(gethostname(host, sizeof(host) - 1), 0);
  EXPECT_EQ(NodeName(nullptr), host);
  EXPECT_EQ(NodeName(""), host);
  EXPECT_FALSE(NodeName(nullptr).empty());
}

}  // namespace
}  // namespace warpscope
