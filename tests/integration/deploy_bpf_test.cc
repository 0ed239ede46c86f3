// Deployment as systemd services (deploy/systemd, scripts/install.sh), as far
// as a machine without systemd as PID 1 allows:
//  - install.sh stages the binaries, units and settings files under DESTDIR,
//    and keeps settings an admin has edited when it runs again;
//  - `systemd-analyze verify` accepts both units (no unknown directive, the
//    commands exist);
//  - each unit's ExecStart, expanded the way systemd expands it (Environment=,
//    then the settings file, then STATE_DIRECTORY / RUNTIME_DIRECTORY), runs:
//    the server serves, the agent profiles this machine into it, and both
//    stop cleanly on SIGTERM, as `systemctl stop` sends.
// All of it for both sources install.sh takes: the built tree, and the release
// tarball (scripts/release.sh) unpacked, whose commands run through the
// release's own loader and libraries (release_bpf_test: the same on Debian 11).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
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
using Env = std::map<std::string, std::string>;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The values of `key=` lines in a unit's [Service] section.
std::vector<std::string> UnitValues(const std::string& unit, const std::string& key) {
  std::vector<std::string> out;
  std::istringstream in(unit);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + "=", 0) == 0) out.push_back(line.substr(key.size() + 1));
  }
  return out;
}

// KEY=VALUE lines (an EnvironmentFile, or Environment= values); '#' comments.
void AddAssignments(const std::string& text, Env* env) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t eq = line.find('=');
    if (eq != std::string::npos) (*env)[line.substr(0, eq)] = line.substr(eq + 1);
  }
}

// systemd's ExecStart expansion, for the forms the units use: a word that is
// exactly $NAME becomes the value's whitespace-separated words (none when it
// is empty); ${NAME} inside a word is replaced by the whole value.
std::vector<std::string> ExpandCommand(const std::string& command, const Env& env) {
  std::vector<std::string> argv;
  std::istringstream words(command);
  std::string word;
  while (words >> word) {
    EXPECT_EQ(word.find('"'), std::string::npos) << "quoting is not emulated here: " << command;
    if (word.size() > 1 && word[0] == '$' && word[1] != '{') {
      auto it = env.find(word.substr(1));
      std::istringstream value(it == env.end() ? "" : it->second);
      std::string part;
      while (value >> part) argv.push_back(part);
      continue;
    }
    for (size_t at; (at = word.find("${")) != std::string::npos;) {
      const size_t end = word.find('}', at);
      auto it = env.find(word.substr(at + 2, end - at - 2));
      word.replace(at, end - at + 1, it == env.end() ? "" : it->second);
    }
    argv.push_back(word);
  }
  return argv;
}

class DeployTest : public ::testing::Test {
 protected:
  void SetUp() override { stage_ = MakeTempDir(); }
  void TearDown() override {
    for (pid_t pid : {agent_, server_}) {
      if (pid > 0) {
        kill(pid, SIGKILL);
        WaitProcess(pid);
      }
    }
    RunProcess({"rm", "-rf", stage_});
  }

  ProcessResult Install() {
    std::vector<std::string> argv = {"/usr/bin/env", "DESTDIR=" + stage_, install_script_};
    argv.insert(argv.end(), install_args_.begin(), install_args_.end());
    return RunProcess(argv);
  }
  // From here on, install.sh of the release tarball made from the built tree.
  void UseRelease() {
    ProcessResult release = RunProcess({WS_RELEASE_SCRIPT, "--build", WS_BUILD_DIR}, 300);
    ASSERT_EQ(release.exit_code, 0) << release.err;
    const size_t at = release.out.rfind("release.sh: ");
    const size_t end = release.out.find(" (", at);
    ASSERT_TRUE(at != std::string::npos && end != std::string::npos) << release.out;
    const std::string tarball = release.out.substr(at + 12, end - at - 12);
    fs::create_directories(stage_ + "/release");
    ProcessResult unpack = RunProcess({"/bin/tar", "-C", stage_ + "/release", "-xzf", tarball});
    ASSERT_EQ(unpack.exit_code, 0) << unpack.err;
    std::string name = fs::path(tarball).filename().string();
    name.resize(name.size() - std::string(".tar.gz").size());
    install_script_ = stage_ + "/release/" + name + "/scripts/install.sh";
    install_args_.clear();
  }
  void InstallVerifyAndRun();
  std::string Staged(const std::string& path) const { return stage_ + path; }

  // The service's command line as systemd would run it, pointed at the stage.
  std::vector<std::string> ServiceCommand(const std::string& service, const Env& directories) {
    const std::string unit = ReadFile(Staged("/etc/systemd/system/" + service + ".service"));
    Env env;
    for (const std::string& value : UnitValues(unit, "Environment")) AddAssignments(value, &env);
    AddAssignments(ReadFile(Staged("/etc/default/" + service)), &env);
    for (const auto& [key, dir] : directories) {
      fs::create_directories(dir);
      env[key] = dir;
    }
    const std::vector<std::string> exec = UnitValues(unit, "ExecStart");
    EXPECT_EQ(exec.size(), 1u);
    std::vector<std::string> argv = ExpandCommand(exec.empty() ? "" : exec[0], env);
    if (!argv.empty()) argv[0] = Staged(argv[0]);
    return argv;
  }

  std::string stage_;
  std::string install_script_ = WS_INSTALL_SCRIPT;
  std::vector<std::string> install_args_ = {"--build", WS_BUILD_DIR};
  pid_t server_ = -1, agent_ = -1;
};

void DeployTest::InstallVerifyAndRun() {
  ProcessResult install = Install();
  ASSERT_EQ(install.exit_code, 0) << install.err;
  for (const char* path :
       {"/usr/local/bin/warpscope-server", "/usr/local/bin/warpscope-agent", "/etc/systemd/system/warpscope-server.service",
        "/etc/systemd/system/warpscope-agent.service", "/etc/default/warpscope-server", "/etc/default/warpscope-agent"}) {
    EXPECT_TRUE(fs::exists(Staged(path))) << path;
  }
#ifdef WS_CUDA_LIBRARY_BUILT
  EXPECT_TRUE(fs::exists(Staged("/usr/local/lib/warpscope/libwarpscope_cuda.so")));
  EXPECT_NE(install.out.find("CUDA_INJECTION64_PATH=/usr/local/lib/warpscope/libwarpscope_cuda.so"), std::string::npos)
      << install.out;
#endif

  // The settings an admin would edit: a port of our own, quicker uploads.
  const int port = FreePort();
  const std::string server_settings = "WARPSCOPE_LISTEN=127.0.0.1:" + std::to_string(port) +
                                      "\nWARPSCOPE_SERVER_ARGS=--retention 1d\n";
  const std::string agent_settings = "# edited\nWARPSCOPE_SERVER=http://127.0.0.1:" + std::to_string(port) +
                                     "\nWARPSCOPE_AGENT_ARGS=--upload-interval 1s --node-name deploy-test "
                                     "--no-gpu-metrics\n";
  std::ofstream(Staged("/etc/default/warpscope-server")) << server_settings;
  std::ofstream(Staged("/etc/default/warpscope-agent")) << agent_settings;
  install = Install();  // an upgrade keeps them
  ASSERT_EQ(install.exit_code, 0) << install.err;
  EXPECT_NE(install.out.find("kept /etc/default/warpscope-agent"), std::string::npos) << install.out;
  EXPECT_EQ(ReadFile(Staged("/etc/default/warpscope-server")), server_settings);
  EXPECT_EQ(ReadFile(Staged("/etc/default/warpscope-agent")), agent_settings);

  // systemd's own check of each unit, with the command pointed at the stage.
  ASSERT_EQ(access("/usr/bin/systemd-analyze", X_OK), 0) << "systemd-analyze (Debian package systemd) is missing";
  for (const std::string service : {"warpscope-server", "warpscope-agent"}) {
    std::string unit = ReadFile(Staged("/etc/systemd/system/" + service + ".service"));
    const size_t at = unit.find("ExecStart=/usr/local/bin/");
    ASSERT_NE(at, std::string::npos) << unit;
    unit.insert(at + std::string("ExecStart=").size(), stage_);
    const std::string check = stage_ + "/" + service + ".service";
    std::ofstream(check) << unit;
    ProcessResult verify = RunProcess({"/usr/bin/systemd-analyze", "verify", check});
    EXPECT_EQ(verify.exit_code, 0) << service << ": " << verify.err;
    EXPECT_EQ(verify.err, "") << service;
  }

  // The server, as the unit starts it.
  const std::vector<std::string> server_argv =
      ServiceCommand("warpscope-server", {{"STATE_DIRECTORY", Staged("/var/lib/warpscope")}});
  ASSERT_GE(server_argv.size(), 5u);
  EXPECT_EQ(server_argv.back(), "1d");  // WARPSCOPE_SERVER_ARGS split into words
  server_ = StartProcess(server_argv, stage_ + "/server.log");
  bool serving = false;
  for (int i = 0; i < 200 && !serving; ++i) {
    serving = HttpGet(port, "/healthz").status == 200;
    if (!serving) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(serving) << ReadFile(stage_ + "/server.log");

  // The agent, as its unit starts it: it profiles this machine into the server.
  const std::vector<std::string> agent_argv =
      ServiceCommand("warpscope-agent", {{"STATE_DIRECTORY", Staged("/var/lib/warpscope-agent")},
                                         {"RUNTIME_DIRECTORY", Staged("/run/warpscope")}});
  agent_ = StartProcess(agent_argv, stage_ + "/agent.log");
  uint64_t samples = 0;
  for (int i = 0; i < 60 && samples == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    HttpResult top = HttpGet(port, "/api/v1/top?from=now-5m&limit=1&selector=" + UrlEncode("{node=\"deploy-test\"}"));
    nlohmann::json j = nlohmann::json::parse(top.body, nullptr, false);
    if (top.status == 200 && j.is_object() && j["total"].is_number()) samples = j["total"].get<uint64_t>();
  }
  EXPECT_GT(samples, 0u) << ReadFile(stage_ + "/agent.log");
  EXPECT_TRUE(fs::exists(Staged("/run/warpscope/cuda.sock")));  // where libwarpscope_cuda.so looks
  EXPECT_TRUE(fs::exists(Staged("/var/lib/warpscope-agent/agent-id")));

  // systemctl stop: SIGTERM to each.
  kill(agent_, SIGTERM);
  EXPECT_EQ(WaitProcess(agent_), 0) << ReadFile(stage_ + "/agent.log");
  agent_ = -1;
  kill(server_, SIGTERM);
  EXPECT_EQ(WaitProcess(server_), 0) << ReadFile(stage_ + "/server.log");
  server_ = -1;
}

TEST_F(DeployTest, InstalledServicesVerifyAndRun) { InstallVerifyAndRun(); }

TEST_F(DeployTest, InstalledReleaseVerifiesAndRuns) {
  ASSERT_NO_FATAL_FAILURE(UseRelease());
  InstallVerifyAndRun();
  // The commands are the release's wrappers around its loader and programs.
  EXPECT_TRUE(fs::exists(Staged("/usr/local/libexec/warpscope-agent")));
  EXPECT_TRUE(fs::exists(Staged("/usr/local/lib/warpscope/bin/warpscope-server")));
  EXPECT_TRUE(fs::exists(Staged("/usr/local/lib/warpscope/runtime/libc.so.6")));
  EXPECT_EQ(ReadFile(Staged("/usr/local/bin/warpscope-agent")).rfind("#!/bin/sh\n", 0), 0u);
}

TEST_F(DeployTest, UninstallRemovesServicesAndKeepsSettings) {
  ASSERT_EQ(Install().exit_code, 0);
  ProcessResult r = RunProcess({"/usr/bin/env", "DESTDIR=" + stage_, WS_INSTALL_SCRIPT, "--uninstall"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* path : {"/usr/local/bin/warpscope-server", "/usr/local/bin/warpscope-agent",
                           "/usr/local/lib/warpscope", "/etc/systemd/system/warpscope-server.service",
                           "/etc/systemd/system/warpscope-agent.service"}) {
    EXPECT_FALSE(fs::exists(Staged(path))) << path;
  }
  EXPECT_TRUE(fs::exists(Staged("/etc/default/warpscope-server")));
  EXPECT_TRUE(fs::exists(Staged("/etc/default/warpscope-agent")));
}

TEST_F(DeployTest, InstallRefusesAMissingBuild) {
  ProcessResult r = RunProcess({"/usr/bin/env", "DESTDIR=" + stage_, WS_INSTALL_SCRIPT, "--build", stage_ + "/nothing"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("build first"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(Staged("/etc/systemd/system/warpscope-agent.service")));
}

}  // namespace
}  // namespace warpscope::testing
