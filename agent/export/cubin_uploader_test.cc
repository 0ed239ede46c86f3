// The cubin uploader against the fake server's cubin store
// (tests/fakes/fake_ingest_server.h): each cubin once, a server that has it
// is asked and not sent it, a server that was down gets it when it is back,
// refusals for good drop it, and the queue's bound.
#include "agent/export/cubin_uploader.h"

#include <gtest/gtest.h>

#include "model/cubin_hash.h"
#include "tests/fakes/fake_ingest_server.h"
#include "tests/support/wait_for.h"

namespace warpscope {
namespace {

using std::chrono::milliseconds;
using testing::FakeIngestServer;
using testing::WaitFor;

constexpr char kToken[] = "cubin-token";

WindowCubin Cubin(size_t size, char fill) {
  auto bytes = std::make_shared<const std::string>(size, fill);
  return WindowCubin{CubinHash(*bytes), bytes};
}

CubinUploaderOptions FastOptions(const std::string& url) {
  CubinUploaderOptions o;
  o.server.server_url = url;
  o.server.token = kToken;
  o.server.connect_timeout = milliseconds(1000);
  o.server.request_timeout = milliseconds(5000);
  o.initial_backoff = milliseconds(40);
  o.max_backoff = milliseconds(200);
  o.shutdown_timeout = milliseconds(2000);
  o.jitter_seed = 1;
  return o;
}

std::unique_ptr<CubinUploader> Start(const CubinUploaderOptions& o) {
  auto u = CubinUploader::Create(o);
  EXPECT_TRUE(u.ok()) << u.status().ToString();
  if (!u.ok()) return nullptr;
  (*u)->Start();
  return std::move(u).value();
}

std::vector<std::string> Methods(const std::vector<FakeIngestServer::CubinRequest>& requests) {
  std::vector<std::string> out;
  for (const auto& r : requests) out.push_back(r.method + " " + std::to_string(r.answered));
  return out;
}

TEST(CubinUploaderTest, EachCubinIsSentOnceAndOneTheServerHasIsNotSent) {
  FakeIngestServer server;
  const WindowCubin mine = Cubin(100'000, 'm'), theirs = Cubin(5000, 't');
  server.StoreCubin(theirs.hash, *theirs.bytes);  // another agent sent it
  auto up = Start(FastOptions(server.url()));
  up->PostCubinFromAnyThread(mine);
  up->PostCubinFromAnyThread(mine);  // another process loaded it too
  up->PostCubinFromAnyThread(theirs);
  ASSERT_TRUE(WaitFor([&] { return up->StatsFromAnyThread().queued == 0; }));
  up->PostCubinFromAnyThread(mine);  // and again, later
  up->Stop();
  EXPECT_EQ(Methods(server.cubin_requests()), (std::vector<std::string>{"HEAD 404", "PUT 201", "HEAD 200"}));
  const auto requests = server.cubin_requests();
  EXPECT_EQ(requests[1].content_encoding, "zstd");
  EXPECT_EQ(requests[1].authorization, std::string("Bearer ") + kToken);
  EXPECT_EQ(server.cubins().at(mine.hash), *mine.bytes) << "byte-exact";
  const CubinUploaderStats s = up->StatsFromAnyThread();
  EXPECT_EQ(s.posted, 2u);
  EXPECT_EQ(s.uploaded, 1u);
  EXPECT_EQ(s.already_stored, 1u);
  EXPECT_EQ(s.failures, 0u);
  EXPECT_EQ(s.queued_bytes, 0u);
}

// Down (503), then a full store (507): kept and retried with backoff, and
// sent once the server takes it; the next cubin waits behind it.
TEST(CubinUploaderTest, AServerThatWasDownGetsTheCubinWhenItIsBack) {
  FakeIngestServer server;
  server.SetCubinStatus(503);
  auto up = Start(FastOptions(server.url()));
  const WindowCubin a = Cubin(3000, 'a'), b = Cubin(3000, 'b');
  up->PostCubinFromAnyThread(a);
  up->PostCubinFromAnyThread(b);
  ASSERT_TRUE(server.WaitForCubinRequests(3));
  server.SetCubinStatus(507);
  const size_t before = server.cubin_requests().size();
  ASSERT_TRUE(server.WaitForCubinRequests(before + 2));
  EXPECT_TRUE(server.cubins().empty());
  EXPECT_EQ(up->StatsFromAnyThread().queued, 2u) << "both kept";
  server.SetCubinStatus(0);
  ASSERT_TRUE(WaitFor([&] { return server.cubins().size() == 2; }));
  up->Stop();
  const CubinUploaderStats s = up->StatsFromAnyThread();
  EXPECT_EQ(s.uploaded, 2u);
  EXPECT_GE(s.failures, 3u);
  EXPECT_EQ(s.dropped, 0u);
  for (const auto& r : server.cubin_requests()) {
    if (r.answered == 503 || r.answered == 507) EXPECT_EQ(r.hash, a.hash) << "b waits behind a";
  }
  // The retries kept their distance: backoff, not a busy loop.
  EXPECT_LT(server.cubin_requests().size(), 60u);
}

TEST(CubinUploaderTest, RefusedForGoodIsDroppedAndCounted) {
  FakeIngestServer server;
  server.SetCubinStatus(413);
  auto up = Start(FastOptions(server.url()));
  up->PostCubinFromAnyThread(Cubin(1000, 'x'));
  ASSERT_TRUE(WaitFor([&] { return up->StatsFromAnyThread().rejected == 1; }));
  server.SetCubinStatus(0);
  up->PostCubinFromAnyThread(Cubin(1000, 'x'));  // not again
  up->PostCubinFromAnyThread(Cubin(1000, 'y'));
  ASSERT_TRUE(WaitFor([&] { return up->StatsFromAnyThread().uploaded == 1; }));
  up->Stop();
  EXPECT_EQ(server.cubins().size(), 1u);
  EXPECT_EQ(server.cubin_requests().size(), 3u) << "HEAD 413, then HEAD and PUT of y";
}

TEST(CubinUploaderTest, TheQueueIsBoundedInBytesAndWhatIsLeftAtStopIsCounted) {
  FakeIngestServer server;
  server.SetCubinStatus(503);
  CubinUploaderOptions o = FastOptions(server.url());
  o.max_queued_bytes = 10'000;
  o.shutdown_timeout = milliseconds(100);
  auto up = Start(o);
  up->PostCubinFromAnyThread(Cubin(6000, 'a'));
  up->PostCubinFromAnyThread(Cubin(6000, 'b'));  // 12,000 would pass 10,000
  up->PostCubinFromAnyThread(Cubin(4000, 'c'));
  CubinUploaderStats s = up->StatsFromAnyThread();
  EXPECT_EQ(s.dropped, 1u);
  EXPECT_EQ(s.queued, 2u);
  EXPECT_EQ(s.queued_bytes, 10'000u);
  up->Stop();
  s = up->StatsFromAnyThread();
  EXPECT_EQ(s.dropped, 3u) << "the two never sent, at stop";
  EXPECT_EQ(s.queued, 0u);
}

}  // namespace
}  // namespace warpscope
