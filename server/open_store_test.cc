// OpenStore's start-up behaviour towards a ClickHouse that is not there: a
// port nobody listens on refuses at once, so these need no ClickHouse (the
// store itself is tested against a real one in storage/clickhouse/ and
// tests/integration/clickhouse_replicas_test.cc).
#include "server/open_store.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

namespace warpscope::server {
namespace {

using std::chrono::milliseconds;

// A loopback port that refuses connections: bound (so nobody else takes it
// during the test) but never listened on.
class RefusingPort {
 public:
  RefusingPort() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    socklen_t len = sizeof(addr);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~RefusingPort() { close(fd_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

ServerOptions ClickHouseAt(int port, milliseconds start_timeout) {
  ServerOptions o;
  o.storage = StorageKind::kClickHouse;
  o.clickhouse_url = "clickhouse://127.0.0.1:" + std::to_string(port) + "/warpscope_test";
  o.clickhouse_start_timeout = start_timeout;
  o.clickhouse_request_timeout = std::chrono::seconds(2);
  return o;
}

TEST(OpenStoreTest, RetryDelayDoublesToFiveSecondsAndStopsAtTheDeadline) {
  const milliseconds plenty(60'000);
  EXPECT_EQ(StartRetryDelay(0, plenty), milliseconds(500));
  EXPECT_EQ(StartRetryDelay(1, plenty), milliseconds(1000));
  EXPECT_EQ(StartRetryDelay(3, plenty), milliseconds(4000));
  EXPECT_EQ(StartRetryDelay(4, plenty), milliseconds(5000));
  EXPECT_EQ(StartRetryDelay(40, plenty), milliseconds(5000));
  EXPECT_EQ(StartRetryDelay(3, milliseconds(300)), milliseconds(300));
}

TEST(OpenStoreTest, UnreachableWithoutStartTimeoutFailsAtOnce) {
  RefusingPort port;
  int waits = 0;
  auto store = OpenStore(ClickHouseAt(port.port(), milliseconds(0)), [&](milliseconds) { return ++waits, true; });
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(waits, 0);
  EXPECT_NE(store.status().message().find("127.0.0.1:" + std::to_string(port.port())), std::string::npos)
      << store.status().message();
}

TEST(OpenStoreTest, UnreachableIsRetriedUntilTheStartTimeout) {
  RefusingPort port;
  std::vector<milliseconds> waits;
  milliseconds waited(0);
  const auto begin = std::chrono::steady_clock::now();
  auto store = OpenStore(ClickHouseAt(port.port(), milliseconds(2500)), [&](milliseconds d) {
    waits.push_back(d);
    waited += d;
    std::this_thread::sleep_for(d);
    return true;
  });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(store.status().message().find("gave up after 2.5s"), std::string::npos) << store.status().message();
  // 0.5 s, then 1 s or what is left (each attempt itself takes a little:
  // the store's client retries a refused connection twice within ~0.5 s).
  ASSERT_GE(waits.size(), 2u);
  EXPECT_EQ(waits[0], milliseconds(500));
  EXPECT_LE(waits[1], milliseconds(1000));
  EXPECT_GT(waits[1], milliseconds(0));
  EXPECT_LE(waited, milliseconds(2500));
  EXPECT_GE(seconds, 2.4);
  EXPECT_LT(seconds, 10);
}

TEST(OpenStoreTest, StopRequestEndsTheRetries) {
  RefusingPort port;
  int waits = 0;
  auto store = OpenStore(ClickHouseAt(port.port(), milliseconds(60'000)), [&](milliseconds) { return ++waits, false; });
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(waits, 1);
  EXPECT_NE(store.status().message().find("stopped while waiting"), std::string::npos) << store.status().message();
}

}  // namespace
}  // namespace warpscope::server
