// Command-line flags of warpscope-server. Pure parsing over argv so every
// error message is unit-tested; nothing here touches the system except
// reading --token-file.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace warpscope::server {

struct ServerOptions {
  std::string listen = "127.0.0.1:7070";
  std::string data_dir = "./warpscope-data";
  std::string token;  // from --token or --token-file; never logged
  bool insecure_listen_any = false;
  std::chrono::nanoseconds retention = std::chrono::hours(24 * 14);  // 0 keeps everything
  size_t max_request_bytes = 16u << 20;
  int threads = 8;
  bool help = false;
};

// argv without the program name. InvalidArgument with a one-line message.
StatusOr<ServerOptions> ParseServerArgs(const std::vector<std::string>& args);

std::string ServerUsage();

}  // namespace warpscope::server
