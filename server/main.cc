// warpscope-server: receives profiles from agents, stores them (the embedded
// store under --data-dir, or ClickHouse: server/open_store.h) and serves the
// query API (docs/api.md) and the web UI (ui/, embedded at build time).
//
// Threads: main parses flags, opens the store, starts the HTTP server and
// then only waits for SIGINT/SIGTERM (a signalfd); HttpServer's workers run
// the handlers; the store runs its own background thread(s).
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <iostream>
#include <string>
#include <vector>

#include "base/logging.h"
#include "server/api_handlers.h"
#include "server/http_server.h"
#include "server/open_store.h"
#include "server/server_options.h"
#include "server/static_files.h"

namespace {

int Run(const warpscope::server::ServerOptions& options) {
  using namespace warpscope;
  // Block the stop signals before any thread starts, so every thread inherits the mask.
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGTERM);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  signal(SIGPIPE, SIG_IGN);

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
  server::HttpServerOptions http;
  http.listen = options.listen;
  http.token = options.token;
  http.insecure_listen_any = options.insecure_listen_any;
  http.max_request_bytes = options.max_request_bytes;
  http.threads = options.threads;
  server::Routes routes = server::ApiRoutes(store->get(), {});
  for (server::Route& r : server::StaticFileRoutes(server::EmbeddedUiFiles())) routes.push_back(std::move(r));
  auto httpd = server::HttpServer::Start(http, std::move(routes));
  if (!httpd.ok()) {
    std::cerr << "warpscope-server: " << httpd.status().message() << "\n";
    return httpd.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  std::string host = options.listen.substr(0, options.listen.rfind(':'));
  if (host.empty() || host == "0.0.0.0" || host == "[::]") host = "127.0.0.1";
  std::cerr << "warpscope-server: serving on http://" << host << ":" << (*httpd)->port() << " ("
            << server::DescribeStorage(options)
            << (options.token.empty() ? ", no token: loopback only" : ", token required") << ")" << std::endl;

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
  if (options->help) {
    std::cout << warpscope::server::ServerUsage();
    return 0;
  }
  return Run(*options);
}
