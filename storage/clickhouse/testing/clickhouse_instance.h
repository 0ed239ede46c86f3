// ClickHouseInstance: a real clickhouse-server (Debian's /usr/sbin/clickhouse-server)
// run as a child of the test, for the ClickHouse store's tests and the
// server-level tests (replicas, ClickHouse down -> 503). CONTRIBUTING.md, "Tests": a
// real ClickHouse, never a fake.
//
//   <dir>/config.xml, <dir>/users.xml   written here (docs/design/clickhouse.md §1)
//   <dir>/data/                         ClickHouse's data
//   <dir>/log/                          server.log, server.err.log, stdout.log
//   <dir>/tls/                          ca.pem, server.pem, server.key (Start with tls)
//
// Ports are free loopback ports picked at Start (a collision with another
// process retries with new ones); Restart keeps the dir and the ports, so
// stores opened on Url() reconnect to the same server and data. Users:
// "default" (no password) and "warpscope" / "s3cret", loopback only.
//
// The child gets PR_SET_PDEATHSIG, so a crashed test leaves no server behind.
//
// Threading: one owner thread; Url() and http_port() may be read from any
// thread while no Stop/Kill/Restart runs.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "base/status.h"

namespace warpscope::clickhouse::testing {

inline constexpr const char* kClickHouseServerPath = "/usr/sbin/clickhouse-server";
inline constexpr const char* kClickHouseUser = "warpscope";
inline constexpr const char* kClickHousePassword = "s3cret";

class ClickHouseInstance {
 public:
  // Creates `dir` if needed and starts a server on it; returns once /ping
  // answers and the server answering is this child (checked by its data path).
  // FailedPrecondition when clickhouse-server is not installed.
  // With `tls`, it also serves HTTPS on https_port() with a certificate for
  // 127.0.0.1 signed by a CA made for it (<dir>/tls/ca.pem, ca_file()),
  // made with the openssl command.
  static StatusOr<std::unique_ptr<ClickHouseInstance>> Start(const std::string& dir, bool tls = false);
  ~ClickHouseInstance();  // Stop()

  ClickHouseInstance(const ClickHouseInstance&) = delete;
  ClickHouseInstance& operator=(const ClickHouseInstance&) = delete;

  int http_port() const { return http_port_; }
  int tcp_port() const { return tcp_port_; }
  const std::string& dir() const { return dir_; }
  // "clickhouse://127.0.0.1:PORT/<database>".
  std::string Url(const std::string& database) const;
  // "clickhouse+https://127.0.0.1:HTTPS_PORT/<database>" (started with tls).
  std::string TlsUrl(const std::string& database) const;
  int https_port() const { return https_port_; }  // 0 without tls
  std::string ca_file() const { return dir_ + "/tls/ca.pem"; }
  bool running() const { return pid_ > 0; }

  // SIGTERM, then wait for the process (SIGKILL after 60 s). No-op when stopped.
  Status Stop();
  // SIGKILL and wait: what a crash of ClickHouse looks like to its clients.
  Status Kill();
  // Stops it if running, then starts it again on the same dir and ports.
  Status Restart();

  // Runs one statement over HTTP as "default" (for test setup and checks);
  // the body of the answer, or an error with ClickHouse's message.
  StatusOr<std::string> Query(const std::string& sql) const;

 private:
  explicit ClickHouseInstance(std::string dir) : dir_(std::move(dir)) {}
  Status WriteConfig() const;
  Status MakeTlsFiles() const;
  // Starts the child on the current ports and waits for it. `collided` is
  // set when it exited because a port was taken.
  Status Launch(bool* collided);

  std::string dir_;
  int http_port_ = 0;
  int tcp_port_ = 0;
  int https_port_ = 0;
  pid_t pid_ = -1;
};

// Whether clickhouse-server is installed. When it is not: FailedPrecondition
// saying how to install it, unless WARPSCOPE_SKIP_CLICKHOUSE=1 (then OK with
// *skip set).
Status CheckClickHouseInstalled(bool* skip);

}  // namespace warpscope::clickhouse::testing
