// TLS: the store over a clickhouse+https:// URL, against a private
// clickhouse-server serving HTTPS with a certificate signed by a CA made for
// the test (ClickHouseInstance::Start with tls). The certificate is verified:
// with the CA given it works end to end; without it (the system's CAs do not
// know the test CA) the store refuses to talk, and says it is TLS.
#include <gtest/gtest.h>

#include "storage/clickhouse/clickhouse_store_test_util.h"
#include "storage/conformance/test_batches.h"

namespace warpscope::clickhouse {
namespace {

using storage::testing::kSec;
using storage::testing::kT0;
using storage::testing::OneSample;

class ClickHouseTlsTest : public testing::PrivateClickHouseTest {
 protected:
  ClickHouseTlsTest() : PrivateClickHouseTest(/*tls=*/true) {}

  ClickHouseOptions TlsOptions() const {
    ClickHouseOptions o = testing::OptionsFor(*ch_, "tls");
    o.url = ch_->TlsUrl("tls");
    o.timeout_ms = 10'000;
    return o;
  }
};

TEST_F(ClickHouseTlsTest, HttpsWithTheServersCaWorksEndToEnd) {
  ClickHouseOptions o = TlsOptions();
  o.ca_file = ch_->ca_file();
  StatusOr<std::unique_ptr<ClickHouseProfileStore>> store = ClickHouseProfileStore::Open(o);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  ASSERT_TRUE((*store)->Ingest(OneSample("a", 1, kT0, 7)).ok());
  ASSERT_TRUE((*store)->Ingest(OneSample("a", 2, kT0 + kSec, 5)).ok());
  storage::ProfileQuery q;
  q.from_ns = kT0;
  q.to_ns = kT0 + 60 * kSec;
  StatusOr<storage::MergedProfile> p = (*store)->SelectProfile(q);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->total, 12);
  // The rows went over HTTPS into the same server the plain port answers for.
  StatusOr<std::string> rows = ch_->Query("SELECT sum(value) FROM tls.samples");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_EQ(*rows, "12\n");
}

TEST_F(ClickHouseTlsTest, AnUnknownCertificateIsRefused) {
  StatusOr<std::unique_ptr<ClickHouseProfileStore>> store = ClickHouseProfileStore::Open(TlsOptions());
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kFailedPrecondition) << store.status().ToString();
  EXPECT_NE(store.status().message().find("TLS"), std::string::npos) << store.status().message();
  // A CA file that is not there is a clear error too, not a silent fallback.
  ClickHouseOptions o = TlsOptions();
  o.ca_file = dir_ + "/no-such-ca.pem";
  store = ClickHouseProfileStore::Open(o);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("TLS"), std::string::npos) << store.status().message();
}

}  // namespace
}  // namespace warpscope::clickhouse
