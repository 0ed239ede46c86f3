#include "server/cubin_handlers.h"

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>

#include "base/logging.h"
#include "model/cubin_hash.h"
#include "server/api_params.h"

namespace warpscope::server {
namespace {

using nlohmann::json;

class CubinHandlers {
 public:
  explicit CubinHandlers(storage::ProfileStore* store) : store_(store) {}

  http::HttpResponse Put(const http::HttpRequest& req) const {
    const std::string hash = HashOf(req);
    const std::string type = req.Header("content-type").value_or("");
    if (!type.empty() && MediaType(type) != "application/octet-stream") {
      return http::HttpResponse::Error(
          415, "a cubin is sent as Content-Type application/octet-stream (the raw bytes), found \"" + type + "\"");
    }
    auto result = store_->PutCubin(hash, req.body);
    if (!result.ok()) {
      if (HttpStatusFor(result.status()) >= 500) {
        LOG_WARNING_EVERY_N_SEC(10) << "storing cubin " << hash << ": " << result.status().message();
      }
      return ErrorFor(result.status());
    }
    const std::string bytes = std::to_string(result->bytes);
    switch (result->outcome) {
      case storage::CubinPutOutcome::kStored:
        return http::HttpResponse::Json(201, Answer(hash, *result, false));
      case storage::CubinPutOutcome::kAlreadyStored:
        return http::HttpResponse::Json(200, Answer(hash, *result, true));
      case storage::CubinPutOutcome::kTooLarge:
        return http::HttpResponse::Error(413, "cubin " + hash + " of " + bytes +
                                                  " bytes is larger than this server takes (--cubin-max-bytes)");
      case storage::CubinPutOutcome::kStoreFull: {
        LOG_WARNING_EVERY_N_SEC(60) << "the cubin store is full (--cubin-store-bytes, or its "
                                    << storage::CubinLimits{}.max_cubins << " cubins): cubin " << hash << " of "
                                    << bytes << " bytes refused";
        http::HttpResponse r = http::HttpResponse::Error(
            507, "the cubin store is full (--cubin-store-bytes, each cubin counted as at least " +
                     std::to_string(storage::CubinChargedBytes(0)) + " bytes, or its count limit): cubin " + hash +
                     " was not stored; retry later, retention frees the room of cubins no longer used");
        r.headers.emplace_back("Retry-After", "300");
        return r;
      }
    }
    return http::HttpResponse::Error(500, "internal error");
  }

  // HEAD: whether the store holds it (no body); GET: its bytes.
  http::HttpResponse Get(const http::HttpRequest& req) const {
    const std::string hash = HashOf(req);
    if (req.method == "HEAD") {
      auto found = store_->FindCubin(hash);
      if (!found.ok()) return ErrorFor(found.status());
      if (!found->has_value()) return NotHeld(hash);
      http::HttpResponse r;
      r.content_type = "application/octet-stream";
      r.headers.emplace_back("X-Warpscope-Cubin-Bytes", std::to_string((*found)->bytes));
      return r;
    }
    auto bytes = store_->ReadCubin(hash);
    if (!bytes.ok()) return ErrorFor(bytes.status());
    if (!bytes->has_value()) return NotHeld(hash);
    http::HttpResponse r;
    r.content_type = "application/octet-stream";
    r.body = std::move(**bytes);
    r.headers.emplace_back("Content-Disposition", "attachment; filename=\"" + hash + ".cubin\"");
    return r;
  }

 private:
  // The path's last part (the handlers check it through the store's calls).
  static std::string HashOf(const http::HttpRequest& req) { return req.path.substr(sizeof(kCubinsPath) - 1); }
  static http::HttpResponse NotHeld(const std::string& hash) {
    return http::HttpResponse::Error(404, "the server holds no cubin " + hash);
  }
  static std::string Answer(const std::string& hash, const storage::CubinPutResult& r, bool already) {
    return json{{"hash", hash}, {"bytes", r.bytes}, {"stored", !already}, {"already_stored", already}}.dump();
  }

  storage::ProfileStore* store_;
};

}  // namespace

void AddCubinRoutes(storage::ProfileStore* store, http::Routes* routes) {
  auto h = std::make_shared<const CubinHandlers>(store);
  auto bind = [h](http::HttpResponse (CubinHandlers::*fn)(const http::HttpRequest&) const) {
    return [h, fn](const http::HttpRequest& req) { return ((*h).*fn)(req); };
  };
  const std::string path = std::string(kCubinsPath) + "*";
  routes->push_back({"PUT", path, bind(&CubinHandlers::Put), http::RouteLane::kIngest});
  routes->push_back({"HEAD", path, bind(&CubinHandlers::Get), http::RouteLane::kIngest});
  routes->push_back({"GET", path, bind(&CubinHandlers::Get)});
}

std::vector<std::string> CubinHashesOf(const warpscope::v1::IngestBatch& batch) {
  std::vector<std::string> hashes;
  for (const warpscope::v1::Location& l : batch.locations()) {
    if (l.kind() != warpscope::v1::FRAME_KIND_GPU_INSTRUCTION || l.mapping() == 0 ||
        l.mapping() > static_cast<uint32_t>(batch.mappings_size())) {
      continue;
    }
    const uint32_t build_id = batch.mappings(static_cast<int>(l.mapping() - 1)).build_id();
    if (build_id >= static_cast<uint32_t>(batch.strings_size())) continue;
    const std::string& hash = batch.strings(static_cast<int>(build_id));
    if (IsCubinHash(hash) && std::find(hashes.begin(), hashes.end(), hash) == hashes.end()) hashes.push_back(hash);
  }
  return hashes;
}

void NoteCubinUses(storage::ProfileStore* store, const warpscope::v1::IngestBatch& batch) {
  const std::vector<std::string> hashes = CubinHashesOf(batch);
  if (hashes.empty()) return;
  if (Status s = store->NoteCubinUses(hashes); !s.ok()) {
    LOG_WARNING_EVERY_N_SEC(60) << "noting the cubins of agent " << batch.agent_id() << "'s batch as used: "
                                << s.message() << " (they may expire sooner)";
  }
}

}  // namespace warpscope::server
