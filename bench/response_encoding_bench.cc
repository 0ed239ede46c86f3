// response_encoding_bench: what compressing a query answer costs, per codec
// and level, on a flame-graph-shaped JSON answer (a string table of function
// names and one row of numbers per node, as query/flame_graph.h writes it).
// The HTTP core's choice (base/http/response_encoding.h) comes from here;
// brotli is measured because Debian's cpp-httplib would use it at quality 11.
//
//   cmake --build build --target response_encoding_bench && build/bin/response_encoding_bench [NODES]
//
// Prints per codec and level: the compressed size as a share of the input,
// and the median of 7 runs of the compression time, per MB of input.
#include <brotli/encode.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "base/gzip.h"
#include "base/http/response_encoding.h"

namespace {

std::string FlameGraphJson(int nodes) {
  std::mt19937_64 rng(7);
  const char* namespaces[] = {"torch::autograd", "at::native", "c10", "std", "pybind11::detail", "_PyEval"};
  std::string json = "{\"total\":123456789,\"names\":[";
  for (int i = 0; i < nodes; ++i) {
    json += "\"" + std::string(namespaces[rng() % 6]) + "::Function" + std::to_string(rng() % 50000) + "(int, float*)\",";
  }
  json += "\"\"],\"binaries\":[\"libtorch_cpu.so\",\"python3.12\",\"libc.so.6\",\"[kernel.kallsyms]\"],\"nodes\":[";
  for (int i = 0; i < nodes; ++i) {
    const uint64_t total = rng() % 1000000;
    json += "[" + std::to_string(i == 0 ? -1 : static_cast<int>(rng() % i)) + "," + std::to_string(i) + "," +
            std::to_string(rng() % 4) + "," + std::to_string(rng() % 3) + "," + std::to_string(total / 3) + "," +
            std::to_string(total) + "],";
  }
  json += "[0,0,0,0,0,0]]}";
  return json;
}

std::string Brotli(const std::string& in, int quality) {
  size_t size = BrotliEncoderMaxCompressedSize(in.size());
  std::string out(size, '\0');
  if (!BrotliEncoderCompress(quality, BROTLI_DEFAULT_WINDOW, BROTLI_MODE_TEXT, in.size(),
                             reinterpret_cast<const uint8_t*>(in.data()), &size,
                             reinterpret_cast<uint8_t*>(out.data()))) {
    return {};
  }
  out.resize(size);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const int nodes = argc > 1 ? std::atoi(argv[1]) : 20000;
  const std::string json = FlameGraphJson(nodes);
  const double mb = static_cast<double>(json.size()) / 1e6;
  std::printf("input: flame-graph JSON of %d nodes, %.2f MB\n", nodes, mb);
  std::printf("%-12s %8s %14s %12s\n", "codec", "size", "ms per MB", "ms (answer)");
  struct Codec {
    std::string name;
    std::function<std::string(const std::string&)> compress;
  };
  std::vector<Codec> codecs;
  for (int level : {1, 3, 6}) {
    codecs.push_back({"zstd -" + std::to_string(level),
                      [level](const std::string& s) { return warpscope::http::ZstdCompress(s, level); }});
  }
  for (int level : {1, 4, 6, 9}) {
    codecs.push_back({"gzip -" + std::to_string(level),
                      [level](const std::string& s) {
                        auto gz = warpscope::GzipCompress(s, level);
                        return gz.ok() ? std::move(gz).value() : std::string();
                      }});
  }
  for (int quality : {4, 11}) {
    codecs.push_back({"brotli -" + std::to_string(quality), [quality](const std::string& s) { return Brotli(s, quality); }});
  }
  for (const Codec& c : codecs) {
    std::vector<double> ms;
    size_t size = 0;
    for (int run = 0; run < 7; ++run) {
      const auto start = std::chrono::steady_clock::now();
      size = c.compress(json).size();
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(ms.begin(), ms.end());
    std::printf("%-12s %7.1f%% %14.1f %12.1f\n", c.name.c_str(), 100.0 * static_cast<double>(size) / json.size(),
                ms[3] / mb, ms[3]);
  }
  return 0;
}
