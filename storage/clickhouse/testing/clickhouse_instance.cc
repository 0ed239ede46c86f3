#include "storage/clickhouse/testing/clickhouse_instance.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "base/file_util.h"
#include "base/logging.h"

namespace warpscope::clickhouse::testing {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kPortAttempts = 8;
constexpr auto kStartTimeout = std::chrono::seconds(60);
constexpr auto kStopTimeout = std::chrono::seconds(60);

// The templates of docs/design/clickhouse.md §1, with the paths and ports
// filled in. Kept small: merges and caches sized for a test.
// https_port 0: no TLS. Otherwise the server also serves HTTPS with the
// certificate made by MakeTlsFiles.
std::string ConfigXml(const std::string& dir, int http_port, int tcp_port, int https_port) {
  const std::string tls =
      https_port == 0 ? ""
                      : "  <https_port>" + std::to_string(https_port) +
                            "</https_port>\n"
                            "  <openSSL><server><certificateFile>" +
                            dir + "/tls/server.pem</certificateFile><privateKeyFile>" + dir +
                            "/tls/server.key</privateKeyFile>\n"
                            "    <verificationMode>none</verificationMode><loadDefaultCAFile>false"
                            "</loadDefaultCAFile><disableProtocols>sslv2,sslv3</disableProtocols>"
                            "</server></openSSL>\n";
  return "<yandex>\n"
         "  <logger><level>information</level><log>" +
         dir +
         "/log/server.log</log>\n"
         "    <errorlog>" +
         dir +
         "/log/server.err.log</errorlog><size>100M</size><count>1</count></logger>\n"
         "  <listen_host>127.0.0.1</listen_host><http_port>" +
         std::to_string(http_port) + "</http_port><tcp_port>" + std::to_string(tcp_port) +
         "</tcp_port>\n" +
         tls +
         "  <path>" +
         dir + "/data/</path><tmp_path>" + dir +
         "/data/tmp/</tmp_path>\n"
         "  <user_files_path>" +
         dir +
         "/data/user_files/</user_files_path>\n"
         "  <format_schema_path>" +
         dir +
         "/data/format_schemas/</format_schema_path>\n"
         "  <users_config>" +
         dir +
         "/users.xml</users_config><timezone>UTC</timezone>\n"
         "  <default_profile>default</default_profile><default_database>default</default_database>\n"
         "  <mark_cache_size>268435456</mark_cache_size><uncompressed_cache_size>268435456</uncompressed_cache_size>\n"
         "</yandex>\n";
}

std::string UsersXml() {
  return "<yandex>\n"
         "  <profiles><default><max_memory_usage>2000000000</max_memory_usage></default></profiles>\n"
         "  <users>\n"
         "    <default><password></password><networks><ip>127.0.0.1</ip></networks>\n"
         "      <profile>default</profile><quota>default</quota></default>\n"
         "    <" +
         std::string(kClickHouseUser) + "><password>" + kClickHousePassword +
         "</password><networks><ip>127.0.0.1</ip></networks>\n"
         "      <profile>default</profile><quota>default</quota></" +
         kClickHouseUser +
         ">\n"
         "  </users>\n"
         "  <quotas><default><interval><duration>3600</duration><queries>0</queries><errors>0</errors>\n"
         "    <result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time>"
         "</interval></default></quotas>\n"
         "</yandex>\n";
}

// Three distinct free loopback ports (bound at once so they differ, then
// released: the server may still lose a race for them, which Start retries).
Status PickPorts(int* a, int* b, int* c) {
  int fds[3] = {-1, -1, -1};
  int ports[3] = {0, 0, 0};
  Status status = Status::Ok();
  for (int i = 0; i < 3 && status.ok(); ++i) {
    fds[i] = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fds[i] < 0) {
      status = ErrnoError(errno, "socket");
      break;
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof(addr);
    if (::bind(fds[i], reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::getsockname(fds[i], reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      status = ErrnoError(errno, "binding a loopback port");
      break;
    }
    ports[i] = ntohs(addr.sin_port);
  }
  for (int fd : fds) {
    if (fd >= 0) ::close(fd);
  }
  *a = ports[0];
  *b = ports[1];
  *c = ports[2];
  return status;
}

size_t Collect(char* data, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

// One HTTP request to the instance as "default"; `sql` empty is GET /ping.
StatusOr<std::string> Http(int port, const std::string& sql, long timeout_ms) {
  static std::once_flag curl_init;
  std::call_once(curl_init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return InternalError("curl_easy_init failed");
  std::string body;
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + (sql.empty() ? "/ping" : "/");
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Collect);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
  if (!sql.empty()) {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, sql.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(sql.size()));
  }
  const CURLcode rc = curl_easy_perform(curl);
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(curl);
  if (rc != CURLE_OK) return UnavailableError(std::string("clickhouse test instance: ") + curl_easy_strerror(rc));
  if (status != 200) return InternalError("HTTP " + std::to_string(status) + ": " + body);
  return body;
}

std::string Tail(const std::string& path, size_t bytes) {
  StatusOr<std::string> text = ReadFileToString(path);
  if (!text.ok()) return "(no " + path + ")";
  return text->size() > bytes ? text->substr(text->size() - bytes) : *text;
}

}  // namespace

Status CheckClickHouseInstalled(bool* skip) {
  *skip = false;
  if (::access(kClickHouseServerPath, X_OK) == 0) return Status::Ok();
  const char* env = std::getenv("WARPSCOPE_SKIP_CLICKHOUSE");
  if (env != nullptr && std::string(env) == "1") {
    *skip = true;
    return Status::Ok();
  }
  return FailedPreconditionError(std::string(kClickHouseServerPath) +
                                 " is not installed: `apt-get install clickhouse-server` (Debian 12; "
                                 "scripts/debian-packages.txt), or set WARPSCOPE_SKIP_CLICKHOUSE=1 to skip "
                                 "the ClickHouse tests");
}

StatusOr<std::unique_ptr<ClickHouseInstance>> ClickHouseInstance::Start(const std::string& dir, bool tls) {
  bool skip = false;
  RETURN_IF_ERROR(CheckClickHouseInstalled(&skip));
  if (skip) return FailedPreconditionError(std::string(kClickHouseServerPath) + " is not installed");
  std::error_code ec;
  const std::string abs = std::filesystem::absolute(dir, ec).lexically_normal().string();
  if (ec) return InternalError("resolving " + dir + ": " + ec.message());
  for (const char* sub : {"", "/log", "/data"}) {
    std::filesystem::create_directories(abs + sub, ec);
    if (ec) return InternalError("creating " + abs + sub + ": " + ec.message());
  }
  std::unique_ptr<ClickHouseInstance> instance(new ClickHouseInstance(abs));
  if (tls) RETURN_IF_ERROR(instance->MakeTlsFiles());
  Status last = Status::Ok();
  for (int attempt = 0; attempt < kPortAttempts; ++attempt) {
    int https_port = 0;
    RETURN_IF_ERROR(PickPorts(&instance->http_port_, &instance->tcp_port_, &https_port));
    if (tls) instance->https_port_ = https_port;
    RETURN_IF_ERROR(instance->WriteConfig());
    bool collided = false;
    last = instance->Launch(&collided);
    if (last.ok()) return instance;
    if (!collided) return last;
    LOG_INFO() << "clickhouse test instance: port " << instance->http_port_ << "/" << instance->tcp_port_
               << " taken, retrying";
  }
  return last;
}

ClickHouseInstance::~ClickHouseInstance() {
  Status s = Stop();
  if (!s.ok()) LOG_WARNING() << "stopping clickhouse test instance: " << s.ToString();
}

std::string ClickHouseInstance::Url(const std::string& database) const {
  return "clickhouse://127.0.0.1:" + std::to_string(http_port_) + "/" + database;
}

std::string ClickHouseInstance::TlsUrl(const std::string& database) const {
  return "clickhouse+https://127.0.0.1:" + std::to_string(https_port_) + "/" + database;
}

// A CA and a server certificate for 127.0.0.1 signed by it, made with the
// openssl command (Debian's openssl package): <dir>/tls/{ca.pem,server.pem,server.key}.
Status ClickHouseInstance::MakeTlsFiles() const {
  const std::string tls = dir_ + "/tls";
  std::error_code ec;
  std::filesystem::create_directories(tls, ec);
  if (ec) return InternalError("creating " + tls + ": " + ec.message());
  RETURN_IF_ERROR(WriteFileAtomically(tls + "/ext.cnf", "subjectAltName=IP:127.0.0.1\n"));
  const std::string q = "'" + tls + "'";
  const std::string script =
      "set -e; cd " + q +
      "; openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 3650 -subj /CN=warpscope-test-ca"
      "; openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=127.0.0.1"
      "; openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 3650 "
      "-extfile ext.cnf";
  const std::string command = "sh -c \"" + script + "\" > " + q + "/openssl.log 2>&1";
  const int rc = std::system(command.c_str());
  if (rc != 0) {
    return FailedPreconditionError("making a test certificate with openssl failed (is Debian's openssl installed?): " +
                                   Tail(tls + "/openssl.log", 1000));
  }
  return Status::Ok();
}

Status ClickHouseInstance::WriteConfig() const {
  RETURN_IF_ERROR(WriteFileAtomically(dir_ + "/config.xml", ConfigXml(dir_, http_port_, tcp_port_, https_port_)));
  return WriteFileAtomically(dir_ + "/users.xml", UsersXml());
}

Status ClickHouseInstance::Launch(bool* collided) {
  *collided = false;
  const std::string config_arg = "--config-file=" + dir_ + "/config.xml";
  const std::string stdout_path = dir_ + "/log/stdout.log";
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return ErrnoError(errno, "fork");
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    const int fd = ::open(stdout_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd >= 0) ::dup2(null_fd, 0);
    ::execl(kClickHouseServerPath, kClickHouseServerPath, config_arg.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  pid_ = pid;
  const auto deadline = Clock::now() + kStartTimeout;
  while (Clock::now() < deadline) {
    int wstatus = 0;
    if (::waitpid(pid_, &wstatus, WNOHANG) == pid_) {
      pid_ = -1;
      const std::string err = Tail(dir_ + "/log/server.err.log", 2000) + Tail(stdout_path, 1000);
      *collided = err.find("Address already in use") != std::string::npos;
      return InternalError("clickhouse-server exited during start (status " + std::to_string(wstatus) +
                           "); its log ends:\n" + err);
    }
    if (Http(http_port_, "", 1000).ok()) {
      // Is the answering server ours, not another process on a reused port?
      StatusOr<std::string> path = Query("SELECT data_path FROM system.databases WHERE name = 'default'");
      if (path.ok() && path->rfind(dir_ + "/data/", 0) == 0) return Status::Ok();
      if (path.ok()) {
        (void)Kill();
        *collided = true;
        return InternalError("another ClickHouse answers on port " + std::to_string(http_port_));
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const std::string err = Tail(dir_ + "/log/server.err.log", 2000);
  (void)Kill();
  return UnavailableError("clickhouse-server did not answer /ping within 60 s; its error log ends:\n" + err);
}

Status ClickHouseInstance::Stop() {
  if (pid_ <= 0) return Status::Ok();
  ::kill(pid_, SIGTERM);
  const auto deadline = Clock::now() + kStopTimeout;
  while (Clock::now() < deadline) {
    int wstatus = 0;
    const pid_t r = ::waitpid(pid_, &wstatus, WNOHANG);
    if (r == pid_ || (r < 0 && errno == ECHILD)) {
      pid_ = -1;
      return Status::Ok();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  LOG_WARNING() << "clickhouse-server " << pid_ << " ignored SIGTERM for 60 s; killing it";
  return Kill();
}

Status ClickHouseInstance::Kill() {
  if (pid_ <= 0) return Status::Ok();
  ::kill(pid_, SIGKILL);
  int wstatus = 0;
  while (::waitpid(pid_, &wstatus, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  return Status::Ok();
}

Status ClickHouseInstance::Restart() {
  RETURN_IF_ERROR(Stop());
  bool collided = false;
  return Launch(&collided);
}

StatusOr<std::string> ClickHouseInstance::Query(const std::string& sql) const { return Http(http_port_, sql, 60'000); }

}  // namespace warpscope::clickhouse::testing
