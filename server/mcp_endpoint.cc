#include "server/mcp_endpoint.h"

#include <strings.h>

#include <algorithm>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "base/logging.h"
#include "query/json_text.h"
#include "server/api_params.h"

namespace warpscope::server {
namespace {

using nlohmann::json;

// JSON-RPC 2.0's error codes.
constexpr int kParseError = -32700;
constexpr int kInvalidRequest = -32600;
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidParams = -32602;
constexpr int kInternalError = -32603;

// What a method answers: {"result": ...} or {"error": {...}}, to which
// HandleMessage adds "jsonrpc" and "id".
json Result(json result) { return json{{"result", std::move(result)}}; }
json Error(int code, const std::string& message) {
  return json{{"error", {{"code", code}, {"message", message}}}};
}

http::HttpResponse RpcErrorResponse(int status, int code, const std::string& message) {
  json body = Error(code, message);
  body["jsonrpc"] = "2.0";
  body["id"] = nullptr;
  return http::HttpResponse::Json(status, query::DumpJson(body));
}

std::string TypeName(const json& v) {
  if (v.is_number_integer()) return "an integer";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_boolean()) return "a boolean";
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  return "null";
}

// The scheme-less authority of an Origin ("http://host:7070" -> "host:7070").
std::string OriginAuthority(const std::string& origin) {
  const size_t at = origin.find("://");
  return at == std::string::npos ? origin : origin.substr(at + 3);
}

bool EqualsIgnoringCase(const std::string& a, const std::string& b) {
  return a.size() == b.size() && strncasecmp(a.c_str(), b.c_str(), a.size()) == 0;
}

// Builds the json tree of one message from nlohmann's SAX events, and stops
// the parse at the first array or object nested deeper than kMaxMcpJsonDepth.
// nlohmann's parser itself is iterative, but copying, comparing, dumping and
// destroying parts of a tree recurse once per level, so a few hundred KB of
// '[' would overflow a worker's stack anywhere the tree is used. Stopping
// here also keeps a deep body from costing memory per level: the parse ends
// at the limit instead of building the rest.
class DepthLimitedJsonBuilder {
 public:
  enum class Outcome { kOk, kTooDeep, kMalformed };

  bool null() { return Add(json(nullptr)); }
  bool boolean(bool v) { return Add(json(v)); }
  bool number_integer(json::number_integer_t v) { return Add(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return Add(json(v)); }
  bool number_float(json::number_float_t v, const std::string&) { return Add(json(v)); }
  bool string(std::string& v) { return Add(json(std::move(v))); }
  bool binary(json::binary_t& v) { return Add(json::binary(std::move(v))); }
  bool start_object(std::size_t) { return Open(json::object()); }
  bool start_array(std::size_t) { return Open(json::array()); }
  bool key(std::string& k) {
    key_ = std::move(k);
    return true;
  }
  bool end_object() { return Close(); }
  bool end_array() { return Close(); }
  bool parse_error(std::size_t, const std::string&, const json::exception&) {
    outcome_ = Outcome::kMalformed;
    return false;
  }

  Outcome outcome() const { return outcome_; }
  json& root() { return root_; }

 private:
  // The value's place: the root, the next element of the open array, or the
  // open object's member under the last key (a repeated key: the last wins,
  // as json::parse does).
  json* Place(json value) {
    if (open_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    json& parent = *open_.back();
    if (parent.is_array()) {
      parent.push_back(std::move(value));
      return &parent.back();
    }
    json& member = parent[key_];
    member = std::move(value);
    return &member;
  }
  bool Add(json value) {
    Place(std::move(value));
    return true;
  }
  bool Open(json container) {
    if (open_.size() >= kMaxMcpJsonDepth) {
      outcome_ = Outcome::kTooDeep;
      return false;
    }
    open_.push_back(Place(std::move(container)));
    return true;
  }
  bool Close() {
    open_.pop_back();
    return true;
  }

  json root_;
  // The arrays and objects open now, outermost first. A pointer stays valid
  // while its container is open: nothing is added to a parent until its
  // child is closed.
  std::vector<json*> open_;
  std::string key_;
  Outcome outcome_ = Outcome::kOk;
};

}  // namespace

json McpToolResult(std::string text, json structured) {
  json r = {{"content", json::array({{{"type", "text"}, {"text", std::move(text)}}})}, {"isError", false}};
  if (structured.is_object()) r["structuredContent"] = std::move(structured);
  return r;
}

json McpToolError(const std::string& message) {
  return {{"content", json::array({{{"type", "text"}, {"text", message}}})}, {"isError", true}};
}

const std::vector<std::string>& McpProtocolVersions() {
  // What changed between them does not touch what this endpoint sends:
  // tools with text and structured content, no sessions or streams.
  static const std::vector<std::string> versions = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};
  return versions;
}

std::optional<std::string> CheckMcpArguments(const json& schema, const json& arguments) {
  if (!arguments.is_object()) return "arguments must be an object, found " + TypeName(arguments);
  const json& properties = schema.contains("properties") ? schema["properties"] : json::object();
  if (schema.contains("required")) {
    for (const json& name : schema["required"]) {
      if (name.is_string() && !arguments.contains(name.get<std::string>())) {
        return "argument '" + name.get<std::string>() + "' is required";
      }
    }
  }
  for (const auto& [name, value] : arguments.items()) {
    if (!properties.contains(name)) {
      std::string known;
      for (const auto& [key, unused] : properties.items()) known += (known.empty() ? "" : ", ") + key;
      return "unknown argument '" + name + "' (this tool takes " + (known.empty() ? "none" : known) + ")";
    }
    const json& p = properties[name];
    const std::string type = p.value("type", "");
    const bool fits = (type == "string" && value.is_string()) || (type == "boolean" && value.is_boolean()) ||
                      (type == "integer" && value.is_number_integer()) ||
                      (type == "number" && value.is_number()) || type.empty();
    if (!fits) return "argument '" + name + "' must be " + (type == "integer" ? "an " : "a ") + type + ", found " +
                      TypeName(value);
    if (p.contains("enum") && std::find(p["enum"].begin(), p["enum"].end(), value) == p["enum"].end()) {
      return "argument '" + name + "' must be one of " + query::DumpJson(p["enum"]) + ", found " +
             query::DumpJson(value);
    }
    if (value.is_number()) {
      const double v = value.get<double>();
      if (p.contains("minimum") && p["minimum"].is_number() && v < p["minimum"].get<double>()) {
        return "argument '" + name + "' must be at least " + query::DumpJson(p["minimum"]) + ", found " +
               query::DumpJson(value);
      }
      if (p.contains("maximum") && p["maximum"].is_number() && v > p["maximum"].get<double>()) {
        return "argument '" + name + "' must be at most " + query::DumpJson(p["maximum"]) + ", found " +
               query::DumpJson(value);
      }
    }
  }
  return std::nullopt;
}

McpEndpoint::McpEndpoint(McpServerInfo info, std::vector<McpTool> tools, QueryCounters* counters)
    : info_(std::move(info)), tools_(std::move(tools)), counters_(counters) {}

http::HttpResponse McpEndpoint::Handle(const http::HttpRequest& req) const {
  http::HttpResponse r = Answer(req);
  if (counters_ != nullptr && r.status >= 400) counters_->mcp_rejected.fetch_add(1, std::memory_order_relaxed);
  return r;
}

http::HttpResponse McpEndpoint::Answer(const http::HttpRequest& req) const {
  // A browser page must not reach the endpoint through DNS rebinding: an
  // Origin (only browsers send one) must name localhost, a loopback address
  // or --listen's host (the HTTP core's IsLocalAuthority), never merely the
  // Host the request went to, which a rebinding page makes its own. Behind
  // the token, a page of the server's own name may also call it.
  if (const auto origin = req.Header("origin")) {
    const bool same_host_with_token =
        req.authenticated && EqualsIgnoringCase(OriginAuthority(*origin), req.Header("host").value_or(""));
    if (!req.local_origin && !same_host_with_token) {
      return RpcErrorResponse(403, kInvalidRequest, "Origin " + *origin + " may not use this endpoint");
    }
  }
  const std::string media = MediaType(req.Header("content-type").value_or(""));
  if (media != "application/json") {
    return RpcErrorResponse(415, kInvalidRequest,
                            "the MCP endpoint takes Content-Type application/json, found \"" +
                                req.Header("content-type").value_or("") + "\"");
  }
  if (const auto version = req.Header("mcp-protocol-version")) {
    const auto& known = McpProtocolVersions();
    if (std::find(known.begin(), known.end(), *version) == known.end()) {
      return RpcErrorResponse(400, kInvalidRequest, "unsupported MCP-Protocol-Version \"" + *version + "\"");
    }
  }
  DepthLimitedJsonBuilder builder;
  const bool parsed = json::sax_parse(req.body, &builder, json::input_format_t::json, /*strict=*/true);
  if (builder.outcome() == DepthLimitedJsonBuilder::Outcome::kTooDeep) {
    if (counters_ != nullptr) counters_->mcp_too_deep.fetch_add(1, std::memory_order_relaxed);
    return RpcErrorResponse(400, kParseError,
                            "Parse error: the body nests arrays and objects more than " +
                                std::to_string(kMaxMcpJsonDepth) + " levels deep");
  }
  if (!parsed || builder.outcome() != DepthLimitedJsonBuilder::Outcome::kOk) {
    if (counters_ != nullptr) counters_->mcp_malformed.fetch_add(1, std::memory_order_relaxed);
    return RpcErrorResponse(400, kParseError, "Parse error: the body is not JSON");
  }
  const json& message = builder.root();
  if (message.is_array()) {
    return RpcErrorResponse(400, kInvalidRequest,
                            "Invalid Request: batches are not supported; send one message per POST");
  }
  const auto jsonrpc = message.is_object() ? message.find("jsonrpc") : message.end();
  if (!message.is_object() || jsonrpc == message.end() || *jsonrpc != "2.0") {
    return RpcErrorResponse(400, kInvalidRequest, "Invalid Request: not a JSON-RPC 2.0 message");
  }
  json response = HandleMessage(message);
  if (response.is_null()) {
    http::HttpResponse accepted = http::HttpResponse::Json(202, "");
    accepted.content_type.clear();
    return accepted;
  }
  return http::HttpResponse::Json(200, query::DumpJson(response));
}

json McpEndpoint::HandleMessage(const json& message) const {
  const bool has_id = message.contains("id");
  if (!message.contains("method")) {
    // A client's response (to a request this endpoint never sends): accepted.
    if (message.contains("result") || message.contains("error")) return nullptr;
    json r = Error(kInvalidRequest, "Invalid Request: neither a request, a notification nor a response");
    r["jsonrpc"] = "2.0";
    r["id"] = has_id && (message["id"].is_string() || message["id"].is_number_integer()) ? message["id"] : json();
    return r;
  }
  if (!has_id) return nullptr;  // a notification (initialized, cancelled, ...): nothing to answer
  const json& id = message["id"];
  json r;
  if (!id.is_string() && !id.is_number_integer()) {
    r = Error(kInvalidRequest, "Invalid Request: id must be a string or an integer");
  } else if (!message["method"].is_string()) {
    r = Error(kInvalidRequest, "Invalid Request: method must be a string");
  } else {
    // References, not copies, into the parsed message: a copy of a tree
    // costs a call per level of it.
    static const json kNoParams = json::object();
    const json& params = message.contains("params") ? message["params"] : kNoParams;
    if (!params.is_object()) {
      r = Error(kInvalidParams, "Invalid params: params must be an object");
    } else {
      r = Dispatch(message["method"].get<std::string>(), params);
    }
  }
  r["jsonrpc"] = "2.0";
  r["id"] = id.is_string() || id.is_number_integer() ? id : json();
  return r;
}

json McpEndpoint::Dispatch(const std::string& method, const json& params) const {
  if (method == "initialize") return Initialize(params);
  if (method == "ping") return Result(json::object());
  if (method == "tools/list") return ListTools();
  if (method == "tools/call") return CallTool(params);
  return Error(kMethodNotFound, "Method not found: " + method);
}

json McpEndpoint::Initialize(const json& params) const {
  const auto version = params.find("protocolVersion");
  if (version == params.end() || !version->is_string()) {
    return Error(kInvalidParams, "Invalid params: protocolVersion (a string) is required");
  }
  const json& requested = *version;
  const auto& known = McpProtocolVersions();
  const bool spoken = std::find(known.begin(), known.end(), requested.get<std::string>()) != known.end();
  json server_info = {{"name", info_.name}, {"version", info_.version}};
  if (!info_.title.empty()) server_info["title"] = info_.title;
  json result = {{"protocolVersion", spoken ? requested.get<std::string>() : known.front()},
                 {"capabilities", {{"tools", {{"listChanged", false}}}}},
                 {"serverInfo", std::move(server_info)}};
  if (!info_.instructions.empty()) result["instructions"] = info_.instructions;
  return Result(std::move(result));
}

json McpEndpoint::ListTools() const {
  json tools = json::array();
  for (const McpTool& t : tools_) {
    json tool = {{"name", t.name}, {"description", t.description}, {"inputSchema", t.input_schema}};
    if (!t.title.empty()) tool["title"] = t.title;
    tools.push_back(std::move(tool));
  }
  return Result({{"tools", std::move(tools)}});
}

json McpEndpoint::CallTool(const json& params) const {
  const auto name_it = params.find("name");
  if (name_it == params.end() || !name_it->is_string()) {
    return Error(kInvalidParams, "Invalid params: name (the tool, a string) is required");
  }
  const std::string name = name_it->get<std::string>();
  const auto tool = std::find_if(tools_.begin(), tools_.end(), [&](const McpTool& t) { return t.name == name; });
  if (tool == tools_.end()) return Error(kInvalidParams, "Unknown tool: " + name);
  static const json kNoArguments = json::object();
  const json& arguments =
      params.contains("arguments") && !params["arguments"].is_null() ? params["arguments"] : kNoArguments;
  if (auto why = CheckMcpArguments(tool->input_schema, arguments)) {
    if (counters_ != nullptr) counters_->mcp_bad_arguments.fetch_add(1, std::memory_order_relaxed);
    return Result(McpToolError(*why));
  }
  // As http::HttpServer does for routes: a tool that throws answers an
  // error instead of taking the worker down.
  try {
    return Result(tool->call(arguments));
  } catch (const std::exception& e) {
    LOG_ERROR() << "MCP tool " << tool->name << " threw: " << e.what();
  } catch (...) {
    LOG_ERROR() << "MCP tool " << tool->name << " threw a non-std exception";
  }
  return Error(kInternalError, "Internal error in tool " + tool->name);
}

}  // namespace warpscope::server
