#include "base/http/response_encoding.h"

#include <strings.h>
#include <zstd.h>

#include <cctype>
#include <cstdlib>

#include "base/gzip.h"

namespace warpscope::http {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool EqualsNoCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

bool HasHeader(const HttpResponse& r, std::string_view name) {
  for (const auto& [k, v] : r.headers) {
    if (EqualsNoCase(k, name)) return true;
  }
  return false;
}

}  // namespace

AcceptedCodings ParseAcceptEncoding(std::string_view accept_encoding) {
  // Each element: coding [; q=value]. A q of 0 refuses the coding.
  bool zstd = false, gzip = false, star = false, zstd_refused = false, gzip_refused = false;
  while (!accept_encoding.empty()) {
    const size_t comma = accept_encoding.find(',');
    std::string_view item = accept_encoding.substr(0, comma);
    accept_encoding = comma == std::string_view::npos ? std::string_view() : accept_encoding.substr(comma + 1);
    std::string_view coding = item;
    bool refused = false;
    if (const size_t semi = item.find(';'); semi != std::string_view::npos) {
      coding = item.substr(0, semi);
      std::string_view param = Trim(item.substr(semi + 1));
      if (param.size() >= 2 && (param[0] == 'q' || param[0] == 'Q') && param[1] == '=') {
        const std::string q(Trim(param.substr(2)));
        refused = std::strtod(q.c_str(), nullptr) <= 0;
      }
    }
    coding = Trim(coding);
    if (EqualsNoCase(coding, "zstd")) (refused ? zstd_refused : zstd) = true;
    if (EqualsNoCase(coding, "gzip") || EqualsNoCase(coding, "x-gzip")) (refused ? gzip_refused : gzip) = true;
    if (coding == "*" && !refused) star = true;
  }
  return {(zstd || star) && !zstd_refused, (gzip || star) && !gzip_refused};
}

BodyEncoding ChooseBodyEncoding(std::string_view accept_encoding) {
  const AcceptedCodings a = ParseAcceptEncoding(accept_encoding);
  if (a.zstd) return BodyEncoding::kZstd;
  if (a.gzip) return BodyEncoding::kGzip;
  return BodyEncoding::kIdentity;
}

bool CompressibleContentType(std::string_view content_type) {
  const std::string_view media = Trim(content_type.substr(0, content_type.find(';')));
  auto starts = [&](std::string_view prefix) {
    return media.size() >= prefix.size() && strncasecmp(media.data(), prefix.data(), prefix.size()) == 0;
  };
  return starts("text/") || EqualsNoCase(media, "application/json") ||
         EqualsNoCase(media, "application/javascript") || EqualsNoCase(media, "image/svg+xml");
}

std::string ZstdCompress(std::string_view data, int level) {
  std::string out(ZSTD_compressBound(data.size()), '\0');
  const size_t n = ZSTD_compress(out.data(), out.size(), data.data(), data.size(), level);
  if (ZSTD_isError(n)) return {};
  out.resize(n);
  return out;
}

void EncodeResponseBody(std::string_view accept_encoding, HttpResponse* response) {
  if (!CompressibleContentType(response->content_type)) return;
  if (!HasHeader(*response, "Vary")) response->headers.emplace_back("Vary", "Accept-Encoding");
  if (response->body.size() < kMinCompressedBytes || HasHeader(*response, "Content-Encoding")) return;
  const BodyEncoding encoding = ChooseBodyEncoding(accept_encoding);
  if (encoding == BodyEncoding::kIdentity) return;
  std::string encoded;
  if (encoding == BodyEncoding::kZstd) {
    encoded = ZstdCompress(response->body, kZstdLevel);
  } else if (StatusOr<std::string> gzip = GzipCompress(response->body, kGzipLevel); gzip.ok()) {
    encoded = std::move(gzip).value();
  }
  if (encoded.empty()) return;  // the compressor failed: send it as it is
  response->body = std::move(encoded);
  response->headers.emplace_back("Content-Encoding", encoding == BodyEncoding::kZstd ? "zstd" : "gzip");
}

}  // namespace warpscope::http
