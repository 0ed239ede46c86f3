// Runs tests/tools/parse_prometheus.py (the Prometheus Python client's
// parser, Debian's python3-prometheus-client) on exposition text, for tests
// that check the agent's /metrics as Prometheus reads it. Test-only.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <unistd.h>

namespace warpscope::testing {

// {"families":[{"name","type","help","samples":[{"name","labels","value"}]}]},
// or a JSON object with "error" when the text does not parse.
inline nlohmann::json ParsePrometheusText(const std::string& text) {
  char path[] = "/tmp/ws-prom-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return {{"error", "mkstemp failed"}};
  close(fd);
  std::ofstream(path) << text;
  const std::string cmd = std::string("/usr/bin/python3 ") + WS_PARSE_PROMETHEUS_SCRIPT + " < " + path + " 2>&1";
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
    const int rc = pclose(p);
    unlink(path);
    if (rc != 0) return {{"error", out}};
  } else {
    unlink(path);
    return {{"error", "popen failed"}};
  }
  nlohmann::json parsed = nlohmann::json::parse(out, nullptr, false);
  if (parsed.is_discarded()) return {{"error", "not JSON: " + out}};
  return parsed;
}

// name -> samples of that family.
inline std::map<std::string, nlohmann::json> PrometheusFamilies(const nlohmann::json& parsed) {
  std::map<std::string, nlohmann::json> out;
  for (const auto& f : parsed["families"]) out[f["name"].get<std::string>()] = f;
  return out;
}

}  // namespace warpscope::testing
