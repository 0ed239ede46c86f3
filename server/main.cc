// warpscope-server: receives profiles from agents, stores them (the embedded
// store under --data-dir, or ClickHouse: server/open_store.h) and serves the
// query API (docs/api.md) and the web UI (ui/, embedded at build time).
//
// Threads: main parses flags, opens the store, starts the HTTP server and
// then only waits for SIGINT/SIGTERM (a signalfd); http::HttpServer's workers run
// the handlers; the store runs its own background thread(s).
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <iostream>
#include <string>
#include <vector>

#include <google/protobuf/stubs/logging.h>

#include "base/logging.h"
#include "server/api_handlers.h"
#include "base/http/http_server.h"
#include "base/http/listen_address.h"
#include "server/open_store.h"
#include "server/server_options.h"
#include "server/static_files.h"

namespace {

// libprotobuf logs an ERROR line for every string field with invalid UTF-8
// it parses, so any client could fill the log; its lines go through a rate
// limit instead.
void LogProtobufMessage(google::protobuf::LogLevel level, const char* filename, int line, const std::string& message) {
  if (level < google::protobuf::LOGLEVEL_WARNING) return;
  LOG_WARNING_EVERY_N_SEC(60) << "libprotobuf " << filename << ":" << line << ": " << message;
}

int Run(const warpscope::server::ServerOptions& options) {
  using namespace warpscope;
  // Block the stop signals before any thread starts, so every thread inherits the mask.
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGTERM);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  signal(SIGPIPE, SIG_IGN);
  google::protobuf::SetLogHandler(&LogProtobufMessage);

  // Start-up retries sleep in sigtimedwait, so SIGINT/SIGTERM ends them.
  auto wait = [&mask](std::chrono::milliseconds d) {
    timespec ts{static_cast<time_t>(d.count() / 1000), static_cast<long>(d.count() % 1000) * 1'000'000};
    return sigtimedwait(&mask, nullptr, &ts) < 0;
  };
  auto store = server::OpenStore(options, wait);
  if (!store.ok()) {
    std::cerr << "warpscope-server: " << store.status().message() << "\n";
    return 1;
  }
  http::HttpServerOptions http;
  http.listen = options.listen;
  http.token = options.token;
  http.insecure_listen_any = options.insecure_listen_any;
  http.max_request_bytes = options.max_request_bytes;
  http.threads = options.threads;
  http.ingest_threads = options.ingest_threads;
  http.connections.max_connections = options.max_connections;
  http.connections.max_connections_per_client = options.max_connections_per_client;
  http::ConnectionCounters http_counters;
  http.counters = &http_counters;
  server::ApiOptions api;
  api.query_timeout = options.query_timeout;
  api.http_counters = &http_counters;
  api.energy.pue = options.pue.value_or(api.energy.pue);
  api.energy.carbon_intensity = options.carbon_intensity.value_or(api.energy.carbon_intensity);
  api.energy.price_per_kwh = options.price_per_kwh.value_or(api.energy.price_per_kwh);
  api.energy.cpu_watts_per_core = options.cpu_watts_per_core.value_or(api.energy.cpu_watts_per_core);
  api.regions = query::RegionTable(options.region_carbon_intensity);
  http::Routes routes = server::ApiRoutes(store->get(), api);
  for (http::Route& r : server::StaticFileRoutes(server::EmbeddedUiFiles())) routes.push_back(std::move(r));
  auto httpd = http::HttpServer::Start(http, std::move(routes));
  if (!httpd.ok()) {
    std::cerr << "warpscope-server: " << httpd.status().message() << "\n";
    return httpd.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  const std::string host = options.listen.substr(0, options.listen.rfind(':'));
  const bool any = host.empty() || host == "0.0.0.0" || host == "[::]";
  const auto listen = http::ParseListenAddress(options.listen);  // checked by ParseServerArgs
  const bool loopback = listen.ok() && listen->is_loopback;
  // Where to point a browser: a wildcard address is reached on loopback.
  // One write: tools (and tests) that wait for this line read it whole.
  const std::string serving =
      "warpscope-server: serving on http://" + std::string(any ? "127.0.0.1" : host) + ":" +
      std::to_string((*httpd)->port()) + (any ? " (all interfaces)" : "") + " (" + server::DescribeStorage(options) +
      (!options.token.empty() ? ", token required"
       : loopback             ? ", no token: loopback only"
                              : ", NO TOKEN: anyone who can reach this address may ingest and query") +
      ")\n";
  std::cerr << serving << std::flush;

  const int fd = signalfd(-1, &mask, SFD_CLOEXEC);
  signalfd_siginfo info{};
  while (fd >= 0 && read(fd, &info, sizeof(info)) < 0 && errno == EINTR) {
  }
  std::cerr << "warpscope-server: stopping" << std::endl;
  (*httpd)->Stop();
  store->reset();  // the embedded store flushes its head so a restart replays little
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  warpscope::server::ServerEnvironment env;
  if (const char* pw = getenv(warpscope::server::kClickHousePasswordEnv)) env.clickhouse_password = pw;
  auto options = warpscope::server::ParseServerArgs(args, env);
  if (!options.ok()) {
    std::cerr << "warpscope-server: " << options.status().message() << "\n";
    return 2;
  }
  for (const std::string& warning : options->warnings) std::cerr << "warpscope-server: warning: " << warning << "\n";
  if (options->help) {
    std::cout << warpscope::server::ServerUsage();
    return 0;
  }
  return Run(*options);
}
