// Pod metadata end to end: a workload placed in a cgroup named like a
// kubelet's (/kubepods/besteffort/pod<uid>/<container id>), a pod list
// served on loopback from the recorded fixture (tests/fixtures/kubernetes),
// `warpscope-agent run` (BPF, root) with the fake NVML reporting the
// workload as a GPU process, and a real warpscope-server:
//  - its CPU series and its per-process GPU metric series carry pod,
//    namespace, container, workload and workload_kind beside pod_uid;
//  - once the pod leaves the list, the agent drops it after the grace
//    period (counted: kubernetes_pods_expired) and sends the process's new
//    windows without the names, while what was stored before keeps them.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "agent/process/container_labels.h"
#include "base/file_util.h"
#include "tests/integration/agent_process.h"
#include "tests/integration/server_process.h"
#include "tests/integration/subprocess.h"

namespace warpscope::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr char kToken[] = "kubernetes-test-token";
constexpr char kServiceAccountToken[] = "fixture-service-account-token";
// The recorded list's Deployment pod and its nginx container.
constexpr char kPodUid[] = "3f6c2a9e-1b47-4d8e-9a05-7e2c41d0b8f3";
constexpr char kContainerId[] = "c842e7e9efb61e3cc052505d39c50d0e0ae82d6b04405ac03322df3549cdf6e0";
constexpr char kPodName[] = "web-7d9f8b6c5d-x2k4q";
const std::string kProgs = WS_TESTPROGS_DIR;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool IsDir(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The kubelet's cgroupfs layout for one container, in the first hierarchy
// where this machine lets root create it: cgroup v2 (/sys/fs/cgroup, or the
// hybrid /sys/fs/cgroup/unified) or a v1 pids, cpu or memory hierarchy.
// Removes the directories it made (after the processes in it are gone).
class FakePodCgroup {
 public:
  ~FakePodCgroup() {
    for (auto it = created_.rbegin(); it != created_.rend(); ++it) rmdir(it->c_str());
  }
  // Moves `pid` into it; the reason it could not, or "".
  std::string Enter(pid_t pid) {
    std::string why;
    for (const std::string root : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified", "/sys/fs/cgroup/pids",
                                   "/sys/fs/cgroup/cpu", "/sys/fs/cgroup/memory"}) {
      if (!IsDir(root) || access((root + "/cgroup.procs").c_str(), W_OK) != 0) continue;
      std::string dir = root;
      bool ok = true;
      for (const std::string& part : {std::string("kubepods"), std::string("besteffort"), "pod" + std::string(kPodUid),
                                     std::string(kContainerId)}) {
        dir += "/" + part;
        if (IsDir(dir)) continue;
        if (mkdir(dir.c_str(), 0755) != 0) {
          why += root + ": mkdir " + dir + ": " + strerror(errno) + "; ";
          ok = false;
          break;
        }
        created_.push_back(dir);
      }
      if (!ok) continue;
      std::ofstream(dir + "/cgroup.procs") << pid << "\n";
      auto text = ReadFileToString("/proc/" + std::to_string(pid) + "/cgroup");
      const ContainerInfo info = text.ok() ? ParseCgroupFile(*text) : ContainerInfo{};
      if (info.pod_uid == kPodUid && info.container_id == kContainerId) return "";
      why += root + ": the process's cgroup does not name the pod; ";
    }
    return why.empty() ? "no writable cgroup hierarchy under /sys/fs/cgroup" : why;
  }

 private:
  std::vector<std::string> created_;
};

// GET /pods: the recorded list, with or without the Deployment pod; 401
// without the service-account token.
class FixturePodServer {
 public:
  FixturePodServer() {
    auto text = ReadFileToString(WS_POD_LIST_FIXTURE);
    EXPECT_TRUE(text.ok());
    if (text.ok()) full_ = *text;
    json list = json::parse(full_, nullptr, false);
    if (list.is_object()) {
      auto& items = list["items"];
      for (auto it = items.begin(); it != items.end(); ++it) {
        if ((*it)["metadata"]["uid"] == kPodUid) {
          items.erase(it);
          break;
        }
      }
      without_pod_ = list.dump();
    }
    server_.Get("/pods", [this](const httplib::Request& req, httplib::Response& res) {
      if (req.get_header_value("Authorization") != std::string("Bearer ") + kServiceAccountToken) {
        res.status = 401;
        return;
      }
      std::lock_guard lock(mu_);
      res.set_content(pod_listed_ ? full_ : without_pod_, "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~FixturePodServer() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/pods"; }
  void RemovePod() {
    std::lock_guard lock(mu_);
    pod_listed_ = false;
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::string full_, without_pod_;
  bool pod_listed_ = true;
};

// warpscope_agent_events_total{event="NAME"} on the agent's /metrics, or -1.
double AgentEvent(int port, const std::string& name) {
  HttpResult r = HttpGet(port, "/metrics");
  const std::string key = "event=\"" + name + "\"} ";
  const size_t at = r.body.find(key);
  if (r.status != 200 || at == std::string::npos) return -1;
  return std::strtod(r.body.c_str() + at + key.size(), nullptr);
}

bool WaitFor(const std::function<bool()>& pred, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(250ms);
  }
  return pred();
}

TEST(KubernetesBpfTest, PodNamesReachStoredSeriesAndOutliveThePod) {
  const std::string dir = MakeTempDir();
  std::ofstream(dir + "/sa-token") << kServiceAccountToken << "\n";
  const pid_t workload = StartProcess({kProgs + "/cpu_split", "40"});
  ASSERT_GT(workload, 0);
  struct Reap {
    pid_t pid;
    ~Reap() {
      kill(pid, SIGKILL);
      WaitProcess(pid);
    }
  };
  FakePodCgroup cgroup;  // destroyed after the workload is reaped
  Reap reap{workload};
  if (const std::string why = cgroup.Enter(workload); !why.empty()) GTEST_SKIP() << "no fake pod cgroup: " << why;

  auto server_or = ServerProcess::Start(WS_SERVER_BIN, dir + "/data", {"--token", kToken});
  ASSERT_TRUE(server_or.ok()) << server_or.status().message();
  std::unique_ptr<ServerProcess> server = std::move(server_or).value();
  FixturePodServer pods;
  {
    std::ofstream script(dir + "/nvml.script");
    script << "devices 1\n"
           << "device 0 name \"NVIDIA H200\" uuid GPU-0000aaaa pci 00000000:19:00.0\n"
           << "set 0 utilization_gpu 40\n"
           << "process 0 " << workload << " sm 30 mem 10 used 1073741824\n";
  }
  setenv("WS_FAKE_NVML_SCRIPT", (dir + "/nvml.script").c_str(), 1);
  const int metrics_port = FreePort();
  const int64_t start_ms = NowMs() - 1000;
  AgentProcess agent(WS_AGENT_BIN,
                     {"--server", server->url(), "--token", kToken, "--upload-interval", "2s", "--state-dir",
                      dir + "/agent", "--node-name", "node-a", "--pid", std::to_string(workload), "--frequency", "49",
                      "--nvml-library", WS_FAKE_NVML_PATH, "--metrics-listen",
                      "127.0.0.1:" + std::to_string(metrics_port), "--kubernetes", "kubelet",
                      "--kubernetes-pods-url", pods.url(), "--kubernetes-token-file", dir + "/sa-token",
                      "--kubernetes-refresh", "1s", "--kubernetes-pod-grace", "2s", "-v"},
                     dir + "/agent.log");
  ASSERT_TRUE(agent.started());

  const std::string group_by = "pod,namespace,container,workload,workload_kind,pod_uid";
  const std::string selector = UrlEncode("{pid=\"" + std::to_string(workload) + "\"}");
  // The workload's series from from_ms on: labels -> samples.
  auto series = [&](int64_t from_ms) {
    std::map<std::string, int64_t> out;
    json s = GetApiJson(server->port(), "/api/v1/series?type=cpu&from=" + std::to_string(from_ms) +
                                            "&to=" + std::to_string(NowMs() + 2000) + "&step=1m&selector=" + selector + "&group_by=" + group_by,
                        kToken);
    for (const json& one : s["series"]) {
      int64_t n = 0;
      for (const json& p : one["points"]) n += p[1].get<int64_t>();
      out[one["labels"].dump()] += n;
    }
    return out;
  };
  const json named = {{"pod", kPodName},        {"namespace", "shop"},  {"container", "nginx"},
                      {"workload", "web"},      {"workload_kind", "Deployment"}, {"pod_uid", kPodUid}};
  json unnamed = {{"pod", ""}, {"namespace", ""}, {"container", ""}, {"workload", ""}, {"workload_kind", ""},
                  {"pod_uid", kPodUid}};
  ASSERT_TRUE(WaitFor([&] { return series(start_ms).count(named.dump()) > 0; }, 30s))
      << "no CPU series with the pod's names\n" << agent.Log();

  // Selecting by the new labels finds the workload.
  json by_workload = GetApiJson(server->port(),
                                "/api/v1/series?type=cpu&from=" + std::to_string(start_ms) + "&to=now&step=1m" +
                                    "&selector=" + UrlEncode("{namespace=\"shop\",workload=\"web\",container=\"nginx\"}") +
                                    "&group_by=pid",
                                kToken);
  ASSERT_EQ(by_workload["series"].size(), 1u) << by_workload.dump();
  EXPECT_EQ(by_workload["series"][0]["labels"]["pid"], std::to_string(workload));

  // Per-process GPU metrics of the same process carry them too.
  auto gpu_series_named = [&] {
    json m = GetApiJson(server->port(), "/api/v1/metrics?name=gpu_process_sm_utilization&from=" +
                                            std::to_string(start_ms) + "&to=now&step=1h&group_by=pid," + group_by,
                        kToken);
    for (const json& one : m["series"]) {
      json l = one["labels"];
      l.erase("pid");
      if (one["labels"].value("pid", "") == std::to_string(workload) && l == named) return true;
    }
    return false;
  };
  EXPECT_TRUE(WaitFor(gpu_series_named, 15s)) << "no per-process GPU metric series with the pod's names";

  // The pod is deleted: gone from the list, dropped after its 2 s grace.
  const int64_t removed_ms = NowMs();
  const std::map<std::string, int64_t> before = series(start_ms);
  pods.RemovePod();
  ASSERT_TRUE(WaitFor([&] { return AgentEvent(metrics_port, "kubernetes_pods_expired") >= 1; }, 20s))
      << "the agent did not drop the pod\n" << agent.Log();
  EXPECT_NE(agent.Log().find("kubernetes: pod shop/" + std::string(kPodName) + " (" + kPodUid +
                             ") dropped from the cache"),
            std::string::npos);
  const int64_t expired_ms = NowMs();
  // The process still runs in the pod's cgroup: its new windows have pod_uid only.
  ASSERT_TRUE(WaitFor([&] { return series(expired_ms + 500).count(unnamed.dump()) > 0; }, 20s))
      << "no new windows without the pod's names\n" << agent.Log();
  EXPECT_EQ(series(expired_ms + 500).count(named.dump()), 0u) << "windows after the drop are not named";
  // What was stored while the pod was listed keeps its names.
  const std::map<std::string, int64_t> after = series(start_ms);
  ASSERT_GT(before.at(named.dump()), 0);
  EXPECT_GE(after.at(named.dump()), before.at(named.dump()));
  EXPECT_GT(AgentEvent(metrics_port, "kubernetes_pod_list_fetches"), 2);
  EXPECT_EQ(AgentEvent(metrics_port, "kubernetes_pod_list_errors"), 0) << "the token was accepted";
  printf("named samples %lld before the pod went (%lld ms after start), %lld in the end\n",
         static_cast<long long>(before.at(named.dump())), static_cast<long long>(removed_ms - start_ms),
         static_cast<long long>(after.at(named.dump())));
  EXPECT_EQ(agent.Stop(), 0);
  server.reset();
  RunProcess({"rm", "-rf", dir});
}

}  // namespace
}  // namespace warpscope::testing
