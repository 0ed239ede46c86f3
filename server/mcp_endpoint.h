// The server side of the Model Context Protocol over its Streamable HTTP
// transport (docs/design/mcp.md): one endpoint, each POST one JSON-RPC 2.0
// message. A request (initialize, ping, tools/list, tools/call) is answered
// with one application/json response; a notification or a client's response
// with 202 and no body. There is no session (no Mcp-Session-Id) and no
// server-initiated stream: every request stands alone, so any worker can
// answer it. GET and DELETE are left to the HTTP core's 405.
//
// McpEndpoint knows nothing about profiles: the tools come from
// mcp_handlers.cc. It checks each call's arguments against the tool's
// inputSchema (the subset of JSON Schema the tools use) before the tool
// runs, so a bad argument is a tool error (isError: true) the model can read
// and correct, never a crash.
//
// Threading: immutable after construction; http::HttpServer's workers call
// Handle concurrently.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/http/http_server.h"
#include "server/query_limits.h"

namespace warpscope::server {

// The deepest a message may nest arrays and objects; a deeper body is a
// parse error (400), refused while it is parsed. The protocol's messages nest
// a handful of levels.
inline constexpr size_t kMaxMcpJsonDepth = 64;

struct McpTool {
  std::string name;
  std::string title;
  std::string description;
  // A JSON Schema of type object: properties of type string, integer,
  // number or boolean (with enum, minimum, maximum), required, and
  // additionalProperties false. Checked before `call` runs.
  nlohmann::json input_schema;
  // Runs the tool on checked arguments (an object); returns a
  // CallToolResult, built by McpToolResult or McpToolError. Must not throw.
  std::function<nlohmann::json(const nlohmann::json& arguments)> call;
};

// A CallToolResult: `text` as its one text content block and `structured`,
// when an object, as its structuredContent.
nlohmann::json McpToolResult(std::string text, nlohmann::json structured = nullptr);
// A tool execution error (isError: true) whose message the model reads.
nlohmann::json McpToolError(const std::string& message);

struct McpServerInfo {
  std::string name;
  std::string title;
  std::string version;
  // Sent with initialize: how a model should use the tools.
  std::string instructions;
};

// The protocol versions the endpoint speaks, newest first. initialize
// answers with the client's version when it is one of them, else the first.
const std::vector<std::string>& McpProtocolVersions();

// Why `arguments` do not fit `schema` (the subset McpTool describes), or
// nullopt when they do.
std::optional<std::string> CheckMcpArguments(const nlohmann::json& schema, const nlohmann::json& arguments);

class McpEndpoint {
 public:
  // `counters` (may be null) count what the endpoint refuses; they must
  // outlive it.
  McpEndpoint(McpServerInfo info, std::vector<McpTool> tools, QueryCounters* counters = nullptr);

  // One POST to the endpoint. Transport errors (a foreign Origin 403, a body
  // that is not application/json 415, an unknown MCP-Protocol-Version 400)
  // and messages that are not JSON-RPC (400, also a body nested deeper than
  // kMaxMcpJsonDepth) carry a JSON-RPC error with id null as their body.
  http::HttpResponse Handle(const http::HttpRequest& req) const;

  // One parsed JSON-RPC message: the response object for a request, null
  // for a notification or a response.
  nlohmann::json HandleMessage(const nlohmann::json& message) const;

 private:
  http::HttpResponse Answer(const http::HttpRequest& req) const;
  nlohmann::json Dispatch(const std::string& method, const nlohmann::json& params) const;
  nlohmann::json Initialize(const nlohmann::json& params) const;
  nlohmann::json ListTools() const;
  nlohmann::json CallTool(const nlohmann::json& params) const;

  McpServerInfo info_;
  std::vector<McpTool> tools_;
  QueryCounters* counters_;
};

}  // namespace warpscope::server
