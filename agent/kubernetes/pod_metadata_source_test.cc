// PodMetadataSource against a pod list served on loopback (cpp-httplib), and
// ResolvePodListTarget's choice of URL.
#include "agent/kubernetes/pod_metadata_source.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/file_util.h"
#include "tests/support/loopback_client.h"

namespace warpscope::kubernetes {
namespace {

using namespace std::chrono_literals;

constexpr char kToken[] = "service-account-token";
constexpr char kWebUid[] = "3f6c2a9e-1b47-4d8e-9a05-7e2c41d0b8f3";
constexpr char kNginx[] = "c842e7e9efb61e3cc052505d39c50d0e0ae82d6b04405ac03322df3549cdf6e0";

// GET /pods answers what `body` holds (with `status`), or 401 without the token.
class FixturePodServer {
 public:
  FixturePodServer() {
    server_.Get("/pods", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lock(mu_);
      ++requests_;
      authorization_ = req.get_header_value("Authorization");
      if (authorization_ != std::string("Bearer ") + kToken) {
        res.status = 401;
        res.set_content(R"({"kind":"Status","apiVersion":"v1","status":"Failure","message":"Unauthorized","code":401})",
                        "application/json");
        return;
      }
      res.status = status_;
      res.set_content(body_, "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~FixturePodServer() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/pods"; }
  void Serve(std::string body, int status = 200) {
    std::lock_guard lock(mu_);
    body_ = std::move(body);
    status_ = status;
  }
  int requests() const {
    std::lock_guard lock(mu_);
    return requests_;
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  mutable std::mutex mu_;
  std::string body_;
  int status_ = 200;
  int requests_ = 0;
  std::string authorization_;
};

std::string Fixture() {
  auto text = ReadFileToString(WS_POD_LIST_FIXTURE);
  EXPECT_TRUE(text.ok());
  return text.ok() ? *text : std::string();
}

// The recorded list without the pod `uid`.
std::string FixtureWithout(const std::string& uid) {
  nlohmann::json list = nlohmann::json::parse(Fixture());
  auto& items = list["items"];
  for (auto it = items.begin(); it != items.end(); ++it) {
    if ((*it)["metadata"]["uid"] == uid) {
      items.erase(it);
      break;
    }
  }
  return list.dump();
}

class PodMetadataSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "pod_source_" + std::to_string(getpid());
    ASSERT_EQ(system(("mkdir -p " + dir_).c_str()), 0);
    token_file_ = dir_ + "/token";
    std::ofstream(token_file_) << kToken << "\n";
  }
  void TearDown() override { (void)system(("rm -rf " + dir_).c_str()); }
  PodSourceOptions Options() {
    PodSourceOptions o;
    o.url = server_.url();
    o.token_file = token_file_;
    o.ca_file = dir_ + "/no-ca.crt";
    o.refresh = 60s;  // only the first fetch and early ones within a test
    o.min_fetch_gap = 100ms;
    o.cache.grace = 5s;
    return o;
  }

  FixturePodServer server_;
  std::string dir_;
  std::string token_file_;
};

TEST_F(PodMetadataSourceTest, ResolvesPodsOfTheFetchedList) {
  server_.Serve(Fixture());
  auto source = PodMetadataSource::Start(Options());
  ASSERT_TRUE(source->WaitForAttemptsFromAnyThread(1, 10s));
  const ContainerInfo nginx{kNginx, "containerd", kWebUid, "burstable"};
  EXPECT_EQ(source->Resolve(nginx),
            (KubernetesLabels{"web-7d9f8b6c5d-x2k4q", "shop", "nginx", "web", "Deployment"}));
  EXPECT_EQ(source->Resolve({}), KubernetesLabels{}) << "a host process";
  const PodSourceStats s = source->StatsFromAnyThread();
  EXPECT_EQ(s.fetches, 1u);
  EXPECT_EQ(s.fetch_errors, 0u);
  EXPECT_EQ(s.pods, 9u);
  EXPECT_GT(s.cache_bytes, 0u);
  EXPECT_EQ(s.lookups_missed, 0u);
}

TEST_F(PodMetadataSourceTest, AnUnknownPodAsksForAnEarlyRefreshOnce) {
  server_.Serve(FixtureWithout(kWebUid));
  auto source = PodMetadataSource::Start(Options());
  ASSERT_TRUE(source->WaitForAttemptsFromAnyThread(1, 10s));
  const ContainerInfo nginx{kNginx, "containerd", kWebUid, "burstable"};
  // The pod starts: its first process is not in the cached list yet.
  server_.Serve(Fixture());
  EXPECT_EQ(source->Resolve(nginx), KubernetesLabels{});
  EXPECT_EQ(source->StatsFromAnyThread().lookups_missed, 1u);
  ASSERT_TRUE(source->WaitForAttemptsFromAnyThread(2, 10s)) << "an early fetch, long before the 60 s refresh";
  EXPECT_EQ(source->Resolve(nginx).pod, "web-7d9f8b6c5d-x2k4q");

  // A pod no list has: one early fetch, then no more within the grace period.
  const ContainerInfo stranger{std::string(64, 'e'), "containerd", "00000000-0000-4000-8000-000000000000", "besteffort"};
  source->Notice(stranger);
  ASSERT_TRUE(source->WaitForAttemptsFromAnyThread(3, 10s));
  for (int i = 0; i < 5; ++i) {
    source->Notice(stranger);
    EXPECT_EQ(source->Resolve(stranger), KubernetesLabels{});
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(source->StatsFromAnyThread().fetches, 3u) << "the missing pod does not refetch every time";
}

TEST_F(PodMetadataSourceTest, APodGoneFromTheListIsDroppedAfterItsGrace) {
  server_.Serve(Fixture());
  PodSourceOptions o = Options();
  o.refresh = 200ms;
  o.cache.grace = 1s;
  auto source = PodMetadataSource::Start(o);
  ASSERT_TRUE(source->WaitForAttemptsFromAnyThread(1, 10s));
  const ContainerInfo nginx{kNginx, "containerd", kWebUid, "burstable"};
  ASSERT_EQ(source->Resolve(nginx).pod, "web-7d9f8b6c5d-x2k4q");
  server_.Serve(FixtureWithout(kWebUid));
  const uint64_t gone_at = source->StatsFromAnyThread().fetches;
  ASSERT_TRUE(source->WaitForAttemptsFromAnyThread(gone_at + 1, 10s));
  EXPECT_EQ(source->Resolve(nginx).pod, "web-7d9f8b6c5d-x2k4q") << "still within its grace";
  for (int i = 0; i < 100 && source->StatsFromAnyThread().expired == 0; ++i) std::this_thread::sleep_for(50ms);
  const PodSourceStats s = source->StatsFromAnyThread();
  EXPECT_EQ(s.expired, 1u);
  EXPECT_EQ(s.pods, 8u);
  EXPECT_EQ(source->Resolve(nginx), KubernetesLabels{});
}

TEST_F(PodMetadataSourceTest, FailuresAreCountedAndKeepTheCache) {
  server_.Serve(Fixture());
  PodSourceOptions o = Options();
  o.max_response_bytes = 1 << 20;
  auto source = PodMetadataSource::Start(o);
  ASSERT_TRUE(source->WaitForAttemptsFromAnyThread(1, 10s));
  const ContainerInfo nginx{kNginx, "containerd", kWebUid, "burstable"};
  // Each step's fetch is an early one, asked for by a pod no list has.
  uint64_t attempts = 1;
  auto next_attempt = [&] {
    ++attempts;
    const std::string uid = "00000000-0000-4000-8000-00000000000" + std::to_string(attempts);
    source->Notice({std::string(64, 'e'), "containerd", uid, "besteffort"});
    return source->WaitForAttemptsFromAnyThread(attempts, 10s);
  };
  server_.Serve(R"({"kind":"Status","message":"etcdserver: request timed out","code":500})", 500);
  ASSERT_TRUE(next_attempt());
  server_.Serve("{\"kind\":\"PodList\",\"items\":[{");  // cut short
  ASSERT_TRUE(next_attempt());
  server_.Serve(std::string(2 << 20, ' '));  // past max_response_bytes
  ASSERT_TRUE(next_attempt());
  server_.Serve(Fixture());
  std::ofstream(token_file_) << "rotated-token\n";  // the server refuses it: 401
  ASSERT_TRUE(next_attempt());
  PodSourceStats s = source->StatsFromAnyThread();
  EXPECT_EQ(s.fetches, 1u);
  EXPECT_EQ(s.fetch_errors, attempts - 1);
  EXPECT_EQ(source->Resolve(nginx).pod, "web-7d9f8b6c5d-x2k4q") << "failures keep the last list";

  // The token file is read for every request: a rotated token is used at once.
  std::ofstream(token_file_) << kToken << "\n";
  ASSERT_TRUE(next_attempt());
  EXPECT_EQ(source->StatsFromAnyThread().fetches, 2u);
  EXPECT_EQ(server_.requests(), static_cast<int>(attempts));
}

TEST_F(PodMetadataSourceTest, NoServerIsAnErrorNotAHang) {
  PodSourceOptions o = Options();
  o.url = "http://127.0.0.1:1/pods";
  auto source = PodMetadataSource::Start(o);
  ASSERT_TRUE(source->WaitForAttemptsFromAnyThread(1, 10s));
  EXPECT_EQ(source->StatsFromAnyThread().fetch_errors, 1u);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(source->Resolve({kNginx, "containerd", kWebUid, "burstable"}), KubernetesLabels{});
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 100ms) << "lookups never wait for the network";
  source->Stop();
}

// HTTPS: `openssl s_server -WWW` serves the recorded list as /pods with a
// certificate for 127.0.0.1 signed by a CA of the test's own, as a kubelet
// serves with a certificate the system does not trust.
class TlsPodServer {
 public:
  explicit TlsPodServer(const std::string& dir) : dir_(dir) {
    const std::string script =
        "cd " + dir + " && mkdir -p www && cp " WS_POD_LIST_FIXTURE " www/pods"
        " && echo subjectAltName=IP:127.0.0.1 > ext.cnf"
        " && openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=test-ca"
        " && openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=127.0.0.1"
        " && openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2"
        " -extfile ext.cnf";
    if (system(("(" + script + ") > " + dir + "/openssl.log 2>&1").c_str()) != 0) return;
    port_ = warpscope::testing::FreeLoopbackPort();
    const std::string www = dir + "/www";
    const std::string accept = "127.0.0.1:" + std::to_string(port_);
    pid_ = fork();  // the child only calls async-signal-safe functions
    if (pid_ == 0) {
      if (chdir(www.c_str()) != 0) _exit(127);
      execlp("openssl", "openssl", "s_server", "-accept", accept.c_str(), "-cert", "../server.pem", "-key",
             "../server.key", "-WWW", "-quiet", static_cast<char*>(nullptr));
      _exit(127);
    }
    for (int i = 0; i < 100 && !Accepts(); ++i) std::this_thread::sleep_for(50ms);
  }
  ~TlsPodServer() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  bool running() const { return pid_ > 0 && Accepts(); }
  std::string url() const { return "https://127.0.0.1:" + std::to_string(port_) + "/pods"; }
  std::string ca() const { return dir_ + "/ca.pem"; }

 private:
  bool Accepts() const {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port_));
    const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
    close(fd);
    return ok;
  }

  std::string dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

TEST_F(PodMetadataSourceTest, HttpsWithTheGivenCaOrWithoutChecks) {
  TlsPodServer tls(dir_);
  if (!tls.running()) GTEST_SKIP() << "no openssl command to serve HTTPS (Debian's openssl package)";
  const ContainerInfo nginx{kNginx, "containerd", kWebUid, "burstable"};
  auto fetch_once = [&](const std::string& ca, bool insecure) {
    PodSourceOptions o = Options();
    o.url = tls.url();
    o.ca_file = ca;
    o.insecure_tls = insecure;
    auto source = PodMetadataSource::Start(o);
    EXPECT_TRUE(source->WaitForAttemptsFromAnyThread(1, 10s));
    const PodSourceStats s = source->StatsFromAnyThread();
    return std::make_pair(s.fetches, source->Resolve(nginx).pod);
  };
  EXPECT_EQ(fetch_once(tls.ca(), false), std::make_pair(uint64_t{1}, std::string("web-7d9f8b6c5d-x2k4q")))
      << "the CA file verifies the certificate";
  EXPECT_EQ(fetch_once(dir_ + "/no-ca.crt", false), std::make_pair(uint64_t{0}, std::string()))
      << "the system's CAs do not know the test's CA: refused";
  EXPECT_EQ(fetch_once(dir_ + "/no-ca.crt", true), std::make_pair(uint64_t{1}, std::string("web-7d9f8b6c5d-x2k4q")))
      << "--kubernetes-insecure-tls";
}

PodSourceEnvironment Env(std::map<std::string, std::string> vars, bool token_exists = true) {
  PodSourceEnvironment env;
  env.getenv = [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  env.file_exists = [token_exists](const std::string&) { return token_exists; };
  return env;
}

TEST(PodListTargetTest, ModesAndTheirUrls) {
  const std::map<std::string, std::string> in_pod = {
      {"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}, {"NODE_IP", "10.0.3.17"}};
  auto url = [](StatusOr<std::optional<PodListTarget>> t) {
    EXPECT_TRUE(t.ok()) << t.status().message();
    return t.ok() && *t ? (*t)->url : std::string("off");
  };
  const std::string tok = kServiceAccountTokenFile;
  EXPECT_EQ(url(ResolvePodListTarget(PodSourceMode::kAuto, "", tok, "node-a", Env({}))), "off") << "not in a pod";
  EXPECT_EQ(url(ResolvePodListTarget(PodSourceMode::kAuto, "", tok, "node-a", Env(in_pod, false))), "off")
      << "no service-account token";
  EXPECT_EQ(url(ResolvePodListTarget(PodSourceMode::kAuto, "", tok, "node-a", Env(in_pod))),
            "https://10.96.0.1:443/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-a&resourceVersion=0");
  EXPECT_EQ(url(ResolvePodListTarget(PodSourceMode::kApiServer, "", tok, "ip-10-0-3-17.ec2.internal",
                                     Env({{"KUBERNETES_SERVICE_HOST", "fd00::1"}}))),
            "https://[fd00::1]:443/api/v1/pods?fieldSelector=spec.nodeName%3Dip-10-0-3-17.ec2.internal"
            "&resourceVersion=0");
  EXPECT_EQ(url(ResolvePodListTarget(PodSourceMode::kKubelet, "", tok, "node-a", Env(in_pod))),
            "https://10.0.3.17:10250/pods");
  EXPECT_EQ(url(ResolvePodListTarget(PodSourceMode::kOff, "http://x/pods", tok, "node-a", Env(in_pod))), "off");
  EXPECT_EQ(url(ResolvePodListTarget(PodSourceMode::kAuto, "http://127.0.0.1:9/pods", tok, "n", Env({}))),
            "http://127.0.0.1:9/pods")
      << "a URL turns auto on";
  auto kubelet = ResolvePodListTarget(PodSourceMode::kKubelet, "", tok, "n", Env({}));
  ASSERT_FALSE(kubelet.ok());
  EXPECT_NE(kubelet.status().message().find("$NODE_IP"), std::string::npos);
  auto api = ResolvePodListTarget(PodSourceMode::kApiServer, "", tok, "n", Env({}));
  ASSERT_FALSE(api.ok());
  EXPECT_NE(api.status().message().find("$KUBERNETES_SERVICE_HOST"), std::string::npos);
}

}  // namespace
}  // namespace warpscope::kubernetes
