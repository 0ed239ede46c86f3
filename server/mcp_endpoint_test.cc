// McpEndpoint's JSON-RPC and transport rules, on one echo tool: what a
// client that gets the protocol wrong is told. The real client end to end
// is tests/mcp/mcp_client_test.mjs.
#include "server/mcp_endpoint.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace warpscope::server {
namespace {

using nlohmann::json;

McpEndpoint EchoEndpoint(QueryCounters* counters = nullptr) {
  McpTool echo;
  echo.name = "echo";
  echo.description = "Says the word back.";
  echo.input_schema = {{"type", "object"},
                       {"properties",
                        {{"word", {{"type", "string"}}},
                         {"times", {{"type", "integer"}, {"minimum", 1}, {"maximum", 3}}},
                         {"mood", {{"type", "string"}, {"enum", {"calm", "loud"}}}}}},
                       {"required", {"word"}},
                       {"additionalProperties", false}};
  echo.call = [](const json& args) {
    const std::string word = args["word"].get<std::string>();
    if (word == "boom") throw std::runtime_error("boom");
    if (word == "fail") return McpToolError("cannot say fail");
    return McpToolResult(word, {{"word", word}});
  };
  McpServerInfo info{"test", "", "1.0", "say things"};
  return McpEndpoint(info, {echo}, counters);
}

http::HttpRequest Post(std::string body, std::string content_type = "application/json") {
  http::HttpRequest req;
  req.method = "POST";
  req.path = "/mcp";
  req.body = std::move(body);
  req.headers.emplace("Content-Type", std::move(content_type));
  req.headers.emplace("Host", "127.0.0.1:7070");
  return req;
}

json Body(const http::HttpResponse& r) { return json::parse(r.body); }

json Call(const McpEndpoint& e, const json& message) {
  http::HttpResponse r = e.Handle(Post(message.dump()));
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.content_type, "application/json");
  return Body(r);
}

json Request(const std::string& method, json params = json::object()) {
  return {{"jsonrpc", "2.0"}, {"id", 7}, {"method", method}, {"params", std::move(params)}};
}

TEST(McpEndpointTest, InitializeNegotiatesTheVersion) {
  const McpEndpoint e = EchoEndpoint();
  json r = Call(e, Request("initialize", {{"protocolVersion", "2025-06-18"},
                                          {"capabilities", json::object()},
                                          {"clientInfo", {{"name", "t"}, {"version", "0"}}}}));
  EXPECT_EQ(r["jsonrpc"], "2.0");
  EXPECT_EQ(r["id"], 7);
  EXPECT_EQ(r["result"]["protocolVersion"], "2025-06-18");
  EXPECT_EQ(r["result"]["serverInfo"]["name"], "test");
  EXPECT_EQ(r["result"]["capabilities"]["tools"]["listChanged"], false);
  EXPECT_EQ(r["result"]["instructions"], "say things");
  // A version it does not speak: its own newest, for the client to decide.
  r = Call(e, Request("initialize", {{"protocolVersion", "2099-01-01"}}));
  EXPECT_EQ(r["result"]["protocolVersion"], McpProtocolVersions().front());
  r = Call(e, Request("initialize", json::object()));
  EXPECT_EQ(r["error"]["code"], -32602);
}

TEST(McpEndpointTest, PingListAndCall) {
  const McpEndpoint e = EchoEndpoint();
  json r = Call(e, {{"jsonrpc", "2.0"}, {"id", "a"}, {"method", "ping"}});
  EXPECT_EQ(r["id"], "a");
  EXPECT_EQ(r["result"], json::object());
  r = Call(e, Request("tools/list"));
  ASSERT_EQ(r["result"]["tools"].size(), 1u);
  EXPECT_EQ(r["result"]["tools"][0]["name"], "echo");
  EXPECT_EQ(r["result"]["tools"][0]["inputSchema"]["type"], "object");
  r = Call(e, Request("tools/call", {{"name", "echo"}, {"arguments", {{"word", "hi"}, {"times", 2}}}}));
  EXPECT_EQ(r["result"]["isError"], false);
  EXPECT_EQ(r["result"]["content"][0]["type"], "text");
  EXPECT_EQ(r["result"]["content"][0]["text"], "hi");
  EXPECT_EQ(r["result"]["structuredContent"]["word"], "hi");
}

TEST(McpEndpointTest, NotificationsAndResponsesAre202WithoutBody) {
  const McpEndpoint e = EchoEndpoint();
  for (const json& m : {json{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}},
                        json{{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", {{"requestId", 1}}}},
                        json{{"jsonrpc", "2.0"}, {"id", 1}, {"result", json::object()}}}) {
    http::HttpResponse r = e.Handle(Post(m.dump()));
    EXPECT_EQ(r.status, 202) << m.dump();
    EXPECT_EQ(r.body, "");
  }
}

TEST(McpEndpointTest, MalformedMessagesAreJsonRpcErrors) {
  const McpEndpoint e = EchoEndpoint();
  http::HttpResponse r = e.Handle(Post("{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": "));
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(Body(r)["error"]["code"], -32700);
  EXPECT_TRUE(Body(r)["id"].is_null());
  r = e.Handle(Post("[{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"ping\"}]"));
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(Body(r)["error"]["code"], -32600);
  r = e.Handle(Post("{\"id\": 1, \"method\": \"ping\"}"));  // no jsonrpc member
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(Body(r)["error"]["code"], -32600);
  r = e.Handle(Post("\"ping\""));
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(Body(r)["error"]["code"], -32600);

  json m = Call(e, {{"jsonrpc", "2.0"}, {"id", 1.5}, {"method", "ping"}});
  EXPECT_EQ(m["error"]["code"], -32600);
  EXPECT_TRUE(m["id"].is_null());
  m = Call(e, {{"jsonrpc", "2.0"}, {"id", 2}, {"method", 5}});
  EXPECT_EQ(m["error"]["code"], -32600);
  m = Call(e, {{"jsonrpc", "2.0"}, {"id", 3}, {"method", "tools/list"}, {"params", json::array()}});
  EXPECT_EQ(m["error"]["code"], -32602);
  m = Call(e, {{"jsonrpc", "2.0"}, {"id", 4}});
  EXPECT_EQ(m["error"]["code"], -32600);
  EXPECT_EQ(m["id"], 4);
}

TEST(McpEndpointTest, UnknownMethodAndTool) {
  const McpEndpoint e = EchoEndpoint();
  json r = Call(e, Request("resources/list"));
  EXPECT_EQ(r["id"], 7);
  EXPECT_EQ(r["error"]["code"], -32601);
  EXPECT_EQ(r["error"]["message"], "Method not found: resources/list");
  r = Call(e, Request("tools/call", {{"name", "nope"}}));
  EXPECT_EQ(r["error"]["code"], -32602);
  EXPECT_EQ(r["error"]["message"], "Unknown tool: nope");
  r = Call(e, Request("tools/call", {{"arguments", json::object()}}));
  EXPECT_EQ(r["error"]["code"], -32602);
}

// Bad arguments are the tool's error, for the model to read and correct.
TEST(McpEndpointTest, BadArgumentsAreToolErrors) {
  const McpEndpoint e = EchoEndpoint();
  auto call = [&](const json& args) {
    json r = Call(e, Request("tools/call", {{"name", "echo"}, {"arguments", args}}));
    EXPECT_EQ(r["result"]["isError"], true) << r.dump();
    return r["result"]["content"][0]["text"].get<std::string>();
  };
  EXPECT_EQ(call(json::object()), "argument 'word' is required");
  EXPECT_EQ(call({{"word", 3}}), "argument 'word' must be a string, found an integer");
  EXPECT_EQ(call({{"word", "x"}, {"times", "2"}}), "argument 'times' must be an integer, found a string");
  EXPECT_EQ(call({{"word", "x"}, {"times", 2.5}}), "argument 'times' must be an integer, found a number");
  EXPECT_EQ(call({{"word", "x"}, {"times", 9}}), "argument 'times' must be at most 3, found 9");
  EXPECT_EQ(call({{"word", "x"}, {"mood", "sad"}}),
            "argument 'mood' must be one of [\"calm\",\"loud\"], found \"sad\"");
  EXPECT_EQ(call({{"word", "x"}, {"colour", "red"}}),
            "unknown argument 'colour' (this tool takes mood, times, word)");
  EXPECT_EQ(call(json::array()), "arguments must be an object, found an array");
  EXPECT_EQ(call({{"word", "fail"}}), "cannot say fail");
  // A tool that throws: an internal error, and the endpoint goes on.
  json r = Call(e, Request("tools/call", {{"name", "echo"}, {"arguments", {{"word", "boom"}}}}));
  EXPECT_EQ(r["error"]["code"], -32603);
  EXPECT_EQ(Call(e, Request("ping"))["result"], json::object());
}

TEST(McpEndpointTest, TransportChecks) {
  const McpEndpoint e = EchoEndpoint();
  const std::string ping = Request("ping").dump();
  http::HttpResponse r = e.Handle(Post(ping, "text/plain"));
  EXPECT_EQ(r.status, 415);
  EXPECT_EQ(Body(r)["error"]["code"], -32600);
  EXPECT_EQ(e.Handle(Post(ping, "application/json; charset=utf-8")).status, 200);

  http::HttpRequest versioned = Post(ping);
  versioned.headers.emplace("MCP-Protocol-Version", "2025-06-18");
  EXPECT_EQ(e.Handle(versioned).status, 200);
  http::HttpRequest unknown = Post(ping);
  unknown.headers.emplace("MCP-Protocol-Version", "1999-01-01");
  EXPECT_EQ(e.Handle(unknown).status, 400);

  // Only a browser sends Origin: it must be a local name (the HTTP core
  // sets local_origin), never merely the Host the request went to.
  http::HttpRequest same = Post(ping);
  same.headers.emplace("Origin", "http://127.0.0.1:7070");
  same.local_origin = true;
  EXPECT_EQ(e.Handle(same).status, 200);
  http::HttpRequest foreign = Post(ping);
  foreign.headers.emplace("Origin", "http://evil.example");
  r = e.Handle(foreign);
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(Body(r)["jsonrpc"], "2.0");
  // DNS rebinding: evil.example now resolves to 127.0.0.1, so the page's
  // Origin and the Host it sends agree; without the token that is no pass.
  http::HttpRequest rebound = Post(ping);
  rebound.headers.erase("Host");
  rebound.headers.emplace("Host", "evil.example:7070");
  rebound.headers.emplace("Origin", "http://evil.example:7070");
  EXPECT_EQ(e.Handle(rebound).status, 403);
  // Behind the token, a page of the server's own name may call it.
  http::HttpRequest own_name = Post(ping);
  own_name.headers.erase("Host");
  own_name.headers.emplace("Host", "warpscope.internal:7070");
  own_name.headers.emplace("Origin", "https://warpscope.internal:7070");
  own_name.authenticated = true;
  EXPECT_EQ(e.Handle(own_name).status, 200);
}

// `levels` arrays, one inside the other, around `core`.
std::string Nested(size_t levels, const std::string& core = "1") {
  return std::string(levels, '[') + core + std::string(levels, ']');
}

// A deep body is refused while it is parsed: copying, comparing or freeing a
// tree recurses once per level, and 150,000 levels (a 300 KB body) took the
// server down through any of them.
TEST(McpEndpointTest, BodiesNestedPastTheLimitAreParseErrors) {
  QueryCounters counters;
  const McpEndpoint e = EchoEndpoint(&counters);
  const std::string head = "{\"jsonrpc\":\"2.0\",\"id\":1,";
  auto send = [&](const std::string& body) { return e.Handle(Post(body)); };
  // The message's own object is level 1: params at level 2 holds the rest.
  http::HttpResponse r = send(head + "\"method\":\"ping\",\"params\":{\"x\":" + Nested(kMaxMcpJsonDepth - 2) + "}}");
  EXPECT_EQ(r.status, 200) << r.body.substr(0, 200);
  for (size_t levels : {kMaxMcpJsonDepth - 1, size_t{1000}, size_t{200'000}}) {
    r = send(head + "\"method\":\"ping\",\"params\":{\"x\":" + Nested(levels) + "}}");
    EXPECT_EQ(r.status, 400) << levels;
    EXPECT_EQ(Body(r)["error"]["code"], -32700);
    EXPECT_NE(Body(r)["error"]["message"].get<std::string>().find("more than 64 levels"), std::string::npos);
  }
  // In a tool's arguments, in an unclosed body, in objects, and at the top.
  r = send(head + "\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"word\":" +
           Nested(200'000) + "}}}");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(send(head + "\"jsonrpc\":" + std::string(200'000, '[')).status, 400);
  std::string objects;
  for (int i = 0; i < 100'000; ++i) objects += "{\"a\":";
  EXPECT_EQ(send(head + "\"method\":\"ping\",\"params\":" + objects).status, 400);
  EXPECT_EQ(send(Nested(4'000'000)).status, 400);
  EXPECT_EQ(counters.mcp_too_deep.load(), 7u);
  EXPECT_EQ(counters.mcp_rejected.load(), 7u);
  // Wide is fine: 100,000 elements at one level.
  std::string wide = "[";
  for (int i = 0; i < 100'000; ++i) wide += (i ? ",1" : "1");
  r = send(head + "\"method\":\"ping\",\"params\":{\"x\":" + wide + "]}}");
  EXPECT_EQ(r.status, 200);
  // The same tree as json::parse builds: repeated keys keep the last value.
  json m = Body(send(head + "\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":"
                            "{\"word\":\"a\",\"word\":\"b\"}}}"));
  EXPECT_EQ(m["result"]["content"][0]["text"], "b");
  EXPECT_EQ(send("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"} x").status, 400);
  EXPECT_EQ(counters.mcp_malformed.load(), 1u);
  EXPECT_EQ(counters.mcp_too_deep.load(), 7u);
  m = Body(send(head + "\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{}}}"));
  EXPECT_EQ(m["result"]["isError"], true);
  EXPECT_EQ(counters.mcp_bad_arguments.load(), 1u);
}

}  // namespace
}  // namespace warpscope::server
