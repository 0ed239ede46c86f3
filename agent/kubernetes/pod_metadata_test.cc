#include "agent/kubernetes/pod_metadata.h"

#include <gtest/gtest.h>

#include <map>

#include "base/file_util.h"

namespace warpscope::kubernetes {
namespace {

using Clock = PodCache::Clock;
using namespace std::chrono_literals;

// Container ids of the recorded list (tests/fixtures/kubernetes/pod_list.json).
constexpr char kNginx[] = "c842e7e9efb61e3cc052505d39c50d0e0ae82d6b04405ac03322df3549cdf6e0";
constexpr char kSidecar[] = "7828cedae08e1c7f556ea42668f0c7cda7677e178258302551a40cf4d0db1c82";
constexpr char kInit[] = "752850bd9a0fbc7faf55ac000f8f3932b93308f7fc08656d38962994bfa1b370";
constexpr char kNodeExporter[] = "2303824a4e3dc61fe3195d1a6e978029d4774876cc9aba9d2c60ef85eb96a845";
constexpr char kDebugger[] = "4c44d7c28ec0f6ca3e2624c6af1d3be324576d01ef6f6c2dc0af7e61664b8c2c";
constexpr char kLegacy[] = "c49fea7425fa7f8699897a97c159c6690267d9003bb78c53fafa8fc15c325d84";
constexpr char kWebUid[] = "3f6c2a9e-1b47-4d8e-9a05-7e2c41d0b8f3";

std::string Fixture() {
  auto text = ReadFileToString(WS_POD_LIST_FIXTURE);
  EXPECT_TRUE(text.ok()) << text.status().message();
  return text.ok() ? *text : std::string();
}

std::map<std::string, PodMetadata> ByName(const std::vector<PodMetadata>& pods) {
  std::map<std::string, PodMetadata> out;
  for (const PodMetadata& p : pods) out[p.name] = p;
  return out;
}

PodMetadata MakePod(const std::string& uid, const std::string& name, size_t containers = 1) {
  PodMetadata p{uid, name, "ns", "Deployment", "app", {}};
  for (size_t i = 0; i < containers; ++i) p.containers.push_back({std::string(64, 'a' + static_cast<char>(i)), "c"});
  return p;
}

TEST(PodListTest, RecordedListGivesEveryPodItsWorkloadAndContainers) {
  auto pods = ParsePodList(Fixture());
  ASSERT_TRUE(pods.ok()) << pods.status().message();
  ASSERT_EQ(pods->size(), 9u);
  auto by = ByName(*pods);

  const PodMetadata& web = by["web-7d9f8b6c5d-x2k4q"];
  EXPECT_EQ(web.uid, kWebUid);
  EXPECT_EQ(web.namespace_name, "shop");
  EXPECT_EQ(web.workload_kind, "Deployment");
  EXPECT_EQ(web.workload, "web");
  std::map<std::string, std::string> containers;
  for (const PodContainer& c : web.containers) containers[c.id] = c.name;
  EXPECT_EQ(containers, (std::map<std::string, std::string>{
                            {kNginx, "nginx"}, {kSidecar, "metrics-sidecar"}, {kInit, "init-config"}}))
      << "containers and init containers, ids without containerd://";

  EXPECT_EQ(by["postgres-0"].workload_kind, "StatefulSet");
  EXPECT_EQ(by["postgres-0"].workload, "postgres");
  EXPECT_EQ(by["postgres-0"].namespace_name, "db");
  EXPECT_EQ(by["nightly-report-29406720-7xk2p"].workload_kind, "CronJob");
  EXPECT_EQ(by["nightly-report-29406720-7xk2p"].workload, "nightly-report");
  EXPECT_EQ(by["migrate-schema-h7x2p"].workload_kind, "Job");
  EXPECT_EQ(by["migrate-schema-h7x2p"].workload, "migrate-schema");
  EXPECT_EQ(by["node-exporter-8xk2m"].workload_kind, "DaemonSet");
  EXPECT_EQ(by["node-exporter-8xk2m"].workload, "node-exporter");
  ASSERT_EQ(by["node-exporter-8xk2m"].containers.size(), 1u);
  EXPECT_EQ(by["node-exporter-8xk2m"].containers[0].id, kNodeExporter) << "cri-o:// stripped";
  EXPECT_EQ(by["legacy-rs-9k2lm"].workload_kind, "ReplicaSet") << "no pod-template-hash: not a Deployment's";
  EXPECT_EQ(by["legacy-rs-9k2lm"].workload, "legacy-rs");
  EXPECT_EQ(by["legacy-rs-9k2lm"].containers.at(0).id, kLegacy) << "docker:// stripped";

  const PodMetadata& bare = by["debug-shell"];
  EXPECT_EQ(bare.workload_kind, "Pod");
  EXPECT_EQ(bare.workload, "debug-shell");
  ASSERT_EQ(bare.containers.size(), 2u) << "the waiting container has no id yet; the ephemeral one counts";
  EXPECT_EQ(bare.containers[1].id, kDebugger);
  EXPECT_EQ(bare.containers[1].name, "debugger-qd7mz");

  EXPECT_EQ(by["kube-proxy-node-a"].workload_kind, "Pod") << "a static pod (owner Node) is its own workload";
  EXPECT_EQ(by["kube-proxy-node-a"].uid, "6f1e2d3c4b5a69788796a5b4c3d2e1f0");
  EXPECT_EQ(by["etcd-node-a"].uid, "a0b1c2d3e4f5061728394a5b6c7d8e9f")
      << "a mirror pod is keyed by the uid its cgroup has, not the API server's";
}

TEST(PodListTest, LabelsOfAProcessNameItsContainer) {
  auto pods = ParsePodList(Fixture());
  ASSERT_TRUE(pods.ok());
  auto by = ByName(*pods);
  const PodMetadata& web = by["web-7d9f8b6c5d-x2k4q"];
  bool found = false;
  KubernetesLabels l = LabelsOf(web, kSidecar, &found);
  EXPECT_TRUE(found);
  EXPECT_EQ(l, (KubernetesLabels{"web-7d9f8b6c5d-x2k4q", "shop", "metrics-sidecar", "web", "Deployment"}));
  l = LabelsOf(web, std::string(64, 'f'), &found);
  EXPECT_FALSE(found);
  EXPECT_EQ(l.container, "");
  EXPECT_EQ(l.pod, "web-7d9f8b6c5d-x2k4q") << "the pod's labels without the container's";
}

TEST(PodListTest, WorkloadRules) {
  auto rs = [](std::string name) { return std::vector<OwnerReference>{{"ReplicaSet", std::move(name), true}}; };
  auto job = [](std::string name) { return std::vector<OwnerReference>{{"Job", std::move(name), true}}; };
  EXPECT_EQ(ResolveWorkload("api-5f7b9-abcde", rs("api-5f7b9"), "5f7b9"), (Workload{"Deployment", "api"}));
  EXPECT_EQ(ResolveWorkload("my-api-v2-5f7b9-abcde", rs("my-api-v2-5f7b9"), "5f7b9"),
            (Workload{"Deployment", "my-api-v2"}));
  EXPECT_EQ(ResolveWorkload("p", rs("api-5f7b9"), "other"), (Workload{"ReplicaSet", "api-5f7b9"}));
  EXPECT_EQ(ResolveWorkload("p", rs("5f7b9"), "5f7b9"), (Workload{"ReplicaSet", "5f7b9"})) << "nothing before the hash";
  EXPECT_EQ(ResolveWorkload("p", rs("api5f7b9"), "5f7b9"), (Workload{"ReplicaSet", "api5f7b9"})) << "no dash";
  EXPECT_EQ(ResolveWorkload("p", job("backup-29406720"), ""), (Workload{"CronJob", "backup"}));
  EXPECT_EQ(ResolveWorkload("p", job("backup-1733090400"), ""), (Workload{"CronJob", "backup"})) << "seconds";
  EXPECT_EQ(ResolveWorkload("p", job("load-2"), ""), (Workload{"Job", "load-2"}));
  EXPECT_EQ(ResolveWorkload("p", job("backup-2940672x"), ""), (Workload{"Job", "backup-2940672x"}));
  EXPECT_EQ(ResolveWorkload("p", job("-29406720"), ""), (Workload{"Job", "-29406720"}));
  EXPECT_EQ(ResolveWorkload("solo", {}, ""), (Workload{"Pod", "solo"}));
  EXPECT_EQ(ResolveWorkload("kube-proxy-n", {{"Node", "n", true}}, ""), (Workload{"Pod", "kube-proxy-n"}));
  EXPECT_EQ(ResolveWorkload("w-0", {{"Workflow", "nightly", true}}, ""), (Workload{"Workflow", "nightly"}))
      << "other controllers as named";
  EXPECT_EQ(ResolveWorkload("p", {{"ConfigMap", "x", false}, {"StatefulSet", "db", true}}, ""),
            (Workload{"StatefulSet", "db"}))
      << "the controller owner, not the first";
  EXPECT_EQ(ResolveWorkload("p", {{"DaemonSet", "ds", false}}, ""), (Workload{"DaemonSet", "ds"}))
      << "no controller marked: the first";
  EXPECT_EQ(StripContainerIdScheme("containerd://abc"), "abc");
  EXPECT_EQ(StripContainerIdScheme("abc"), "abc");
}

TEST(PodListTest, NotAPodListIsAnError) {
  EXPECT_FALSE(ParsePodList("").ok());
  EXPECT_FALSE(ParsePodList("{\"items\": [").ok());
  EXPECT_FALSE(ParsePodList("[]").ok());
  auto status = ParsePodList(R"({"kind":"Status","apiVersion":"v1","status":"Failure",
      "message":"pods is forbidden: User \"system:serviceaccount:warpscope:agent\" cannot list resource \"pods\"",
      "reason":"Forbidden","code":403})");
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.status().message().find("kind Status: pods is forbidden"), std::string::npos)
      << status.status().message();
  auto empty = ParsePodList(R"({"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":null})");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  auto odd = ParsePodList(R"({"kind":"PodList","items":[1,{"metadata":{"name":"no-uid"}},
      {"metadata":{"uid":"u1","name":"ok","ownerReferences":"x","annotations":[]},"status":{"containerStatuses":{}}}]})");
  ASSERT_TRUE(odd.ok()) << odd.status().message();
  ASSERT_EQ(odd->size(), 1u) << "items without a uid or name are left out; odd shapes are ignored";
  EXPECT_EQ((*odd)[0].workload_kind, "Pod");
}

TEST(PodCacheTest, PodsThatLeaveTheListStayForTheGracePeriod) {
  PodCache cache({.max_pods = 100, .max_bytes = 1 << 20, .grace = 30s});
  const auto t0 = Clock::now();
  auto r = cache.Update({MakePod("u1", "a"), MakePod("u2", "b")}, t0);
  EXPECT_EQ(r.listed, 2u);
  EXPECT_EQ(cache.size(), 2u);
  r = cache.Update({MakePod("u2", "b")}, t0 + 20s);
  EXPECT_TRUE(r.expired.empty());
  ASSERT_NE(cache.Find("u1"), nullptr) << "gone for 20 s of a 30 s grace";
  r = cache.Update({MakePod("u2", "b")}, t0 + 31s);
  ASSERT_EQ(r.expired.size(), 1u);
  EXPECT_EQ(r.expired[0], "ns/a (u1)");
  EXPECT_EQ(cache.Find("u1"), nullptr);
  ASSERT_NE(cache.Find("u2"), nullptr);
  EXPECT_EQ(cache.Find("u2")->name, "b");
  r = cache.Update({}, t0 + 40s);
  EXPECT_NE(cache.Find("u2"), nullptr) << "an empty list starts u2's grace";
  EXPECT_EQ(cache.size(), 1u);
}

TEST(PodCacheTest, BoundsOnPodsAndBytesCountWhatIsLeftOut) {
  PodCache by_count({.max_pods = 3, .max_bytes = 1 << 20, .grace = 1min});
  const auto t0 = Clock::now();
  auto r = by_count.Update({MakePod("u1", "a"), MakePod("u2", "b"), MakePod("u3", "c"), MakePod("u4", "d")}, t0);
  EXPECT_EQ(r.listed, 3u);
  EXPECT_EQ(r.dropped, 1u);
  EXPECT_EQ(by_count.Find("u4"), nullptr);
  // Listed pods come before pods within their grace.
  r = by_count.Update({MakePod("u4", "d"), MakePod("u5", "e")}, t0 + 1s);
  EXPECT_EQ(r.listed, 2u);
  EXPECT_EQ(r.dropped, 2u) << "one of u1..u3 fits beside u4 and u5";
  EXPECT_EQ(by_count.size(), 3u);
  EXPECT_NE(by_count.Find("u4"), nullptr);
  EXPECT_NE(by_count.Find("u5"), nullptr);

  const size_t one = MakePod("u1", "a", 4).Bytes();
  PodCache by_bytes({.max_pods = 100, .max_bytes = 2 * one + one / 2, .grace = 1min});
  r = by_bytes.Update({MakePod("u1", "a", 4), MakePod("u2", "b", 4), MakePod("u3", "c", 4)}, t0);
  EXPECT_EQ(r.listed, 2u);
  EXPECT_EQ(r.dropped, 1u);
  EXPECT_EQ(by_bytes.bytes(), 2 * one);
  EXPECT_LE(by_bytes.bytes(), 2 * one + one / 2);

  // The recorded list's pods cost what the bound says, not the JSON's size.
  auto pods = ParsePodList(Fixture());
  ASSERT_TRUE(pods.ok());
  PodCache all;
  all.Update(std::move(pods).value(), t0);
  EXPECT_EQ(all.size(), 9u);
  EXPECT_LT(all.bytes(), 8000u);
}

TEST(PodCacheTest, AUidTwiceInOneListKeepsTheFirst) {
  PodCache cache;
  cache.Update({MakePod("u1", "first"), MakePod("u1", "second")}, Clock::now());
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(cache.Find("u1")->name, "first");
}

}  // namespace
}  // namespace warpscope::kubernetes
