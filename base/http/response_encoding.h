// How answers are compressed on the wire. The HTTP core does it itself, not
// cpp-httplib: Debian's httplib is built with brotli and would compress
// every text and JSON answer at brotli's quality 11, which costs seconds per
// megabyte of flame-graph JSON (docs/benchmarks.md, "Web UI"). So the
// connection layer hides the request's Accept-Encoding from httplib
// (kHiddenAcceptEncoding, connection_server.cc) and the core picks zstd or
// gzip at fast levels from it.
//
// Pure functions; any thread.
#pragma once

#include <string>
#include <string_view>

#include "base/http/http_server.h"

namespace warpscope::http {

// The request header Accept-Encoding arrives under this name: same length,
// so the buffered request head keeps its offsets.
inline constexpr char kHiddenAcceptEncoding[] = "x-ws-accept-enc";
static_assert(sizeof(kHiddenAcceptEncoding) == sizeof("accept-encoding"));

enum class BodyEncoding { kIdentity, kGzip, kZstd };

struct AcceptedCodings {
  bool zstd = false;
  bool gzip = false;
};
// What an Accept-Encoding value accepts of ours. Honours q=0 ("gzip;q=0"
// refuses gzip) and "*".
AcceptedCodings ParseAcceptEncoding(std::string_view accept_encoding);

// The best encoding of ours the client accepts: zstd, then gzip, else
// identity.
BodyEncoding ChooseBodyEncoding(std::string_view accept_encoding);

// Text, JSON, JavaScript and SVG compress; everything else (pprof, already
// gzip; images; fonts) is sent as it is.
bool CompressibleContentType(std::string_view content_type);

// Levels chosen by measurement (bench/response_encoding_bench.cc,
// docs/benchmarks.md "Web UI"): on a 1.4 MB flame-graph answer the fastest
// levels come within a few points of the best sizes (zstd 1: 25.5 % in
// 4 ms/MB; gzip 1: 28.7 % in 11 ms/MB; brotli 11: 19.5 % in 2.7 s/MB).
inline constexpr int kZstdLevel = 1;
inline constexpr int kGzipLevel = 1;
// Smaller bodies are not worth a compressor's setup and the header.
inline constexpr size_t kMinCompressedBytes = 1024;

// Compresses `response` for a client that accepts `accept_encoding`, unless
// it already has a Content-Encoding, is small, or is not compressible; adds
// "Vary: Accept-Encoding" to every compressible answer.
void EncodeResponseBody(std::string_view accept_encoding, HttpResponse* response);

// Whole-buffer zstd, "" when it fails (gzip: base/gzip.h).
std::string ZstdCompress(std::string_view data, int level);

}  // namespace warpscope::http
