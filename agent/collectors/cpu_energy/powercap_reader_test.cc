#include "agent/collectors/cpu_energy/powercap_reader.h"

#include <gtest/gtest.h>

#include <map>

#include "agent/collectors/cpu_energy/cpu_energy_collector.h"
#include "tests/support/powercap_fixture.h"
#include "tests/support/scratch_dir.h"

namespace warpscope {
namespace {

using testing::PowercapFixture;
using testing::ScratchDir;

// "metric{zone}" -> joules.
std::map<std::string, double> ByZone(const std::vector<MetricReading>& readings) {
  std::map<std::string, double> out;
  for (const MetricReading& r : readings) {
    EXPECT_EQ(r.unit, "joules");
    EXPECT_EQ(r.labels.size(), 1u);
    const std::string* zone = FindLabel(r, "zone");
    EXPECT_NE(zone, nullptr);
    out[r.metric + "{" + (zone ? *zone : "") + "}"] = r.value;
  }
  return out;
}

// A two-socket server with DRAM zones, and what a laptop adds: psys, core
// and uncore subzones, the MMIO interface to package 0.
void WriteServer(PowercapFixture* f) {
  f->AddZone("intel-rapl:0", "package-0", 1'000'000);
  f->AddZone("intel-rapl:0:0", "dram", 200'000);
  f->AddZone("intel-rapl:0:1", "core", 500'000);
  f->AddZone("intel-rapl:0:2", "uncore", 100'000);
  f->AddZone("intel-rapl:1", "package-1", 3'000'000);
  f->AddZone("intel-rapl:1:0", "dram", 400'000);
  f->AddZone("intel-rapl:2", "psys", 9'000'000);
  f->AddZone("intel-rapl-mmio:0", "package-0", 1'000'000);
}

TEST(PowercapReaderTest, PackagesAndDramCountedPsysCoreUncoreAndMmioNot) {
  ScratchDir dir;
  PowercapFixture f(dir.path());
  WriteServer(&f);
  f.MakeUnreadable("intel-rapl:1:0");
  auto reader = PowercapReader::Open(f.root());
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  std::vector<MetricReading> readings;
  (*reader)->ReadInto(42, &readings);
  // The origin is the counter's value at the first read.
  EXPECT_EQ(ByZone(readings), (std::map<std::string, double>{{"cpu_energy{package-0}", 1.0},
                                                              {"cpu_energy{package-1}", 3.0},
                                                              {"dram_energy{package-0/dram}", 0.2}}));
  for (const MetricReading& r : readings) EXPECT_EQ(r.time_unix_nanos, 42);
  EXPECT_EQ((*reader)->stats().zones, 3u);
  EXPECT_EQ((*reader)->stats().unreadable_zones, 1u) << "package-1's DRAM, reported once";

  f.SetEnergy("intel-rapl:0", 1'500'000);
  f.SetEnergy("intel-rapl:0:0", 200'250);
  f.SetEnergy("intel-rapl:1", 3'000'001);
  f.SetEnergy("intel-rapl:2", 99'000'000);
  (*reader)->ReadInto(43, &readings);
  EXPECT_EQ(ByZone(readings), (std::map<std::string, double>{{"cpu_energy{package-0}", 1.5},
                                                              {"cpu_energy{package-1}", 3.000001},
                                                              {"dram_energy{package-0/dram}", 0.20025}}));
}

// Past max_energy_range_uj the counter starts again from 0; the series
// goes on growing by what was used.
TEST(PowercapReaderTest, WraparoundIsCarried) {
  ScratchDir dir;
  PowercapFixture f(dir.path());
  constexpr uint64_t kMax = 262143328850;
  f.AddZone("intel-rapl:0", "package-0", kMax - 3'000'000, kMax);
  auto reader = PowercapReader::Open(f.root());
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  std::vector<MetricReading> readings;
  const double start = (kMax - 3'000'000) / 1e6;
  f.SetEnergy("intel-rapl:0", kMax - 1'000'000);
  (*reader)->ReadInto(1, &readings);
  ASSERT_EQ(readings.size(), 1u);
  EXPECT_DOUBLE_EQ(readings[0].value, start + 2.0);
  f.SetEnergy("intel-rapl:0", 4'000'000);  // 1 J to the top, 4 J after it
  (*reader)->ReadInto(2, &readings);
  ASSERT_EQ(readings.size(), 1u);
  EXPECT_DOUBLE_EQ(readings[0].value, start + 7.0);
  f.SetEnergy("intel-rapl:0", 4'500'000);
  (*reader)->ReadInto(3, &readings);
  EXPECT_DOUBLE_EQ(readings[0].value, start + 7.5);
  EXPECT_EQ((*reader)->stats().wraparounds, 1u);
}

// Without a usable range a decrease cannot be measured: that interval is
// left out, the counter never goes back.
TEST(PowercapReaderTest, DecreaseWithoutRangeIsAResetNotCounted) {
  ScratchDir dir;
  PowercapFixture f(dir.path());
  f.AddZone("intel-rapl:0", "package-0", 5'000'000, 0);
  auto reader = PowercapReader::Open(f.root());
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  std::vector<MetricReading> readings;
  f.SetEnergy("intel-rapl:0", 1'000'000);
  (*reader)->ReadInto(1, &readings);
  EXPECT_DOUBLE_EQ(readings.at(0).value, 5.0);
  f.SetEnergy("intel-rapl:0", 3'000'000);
  (*reader)->ReadInto(2, &readings);
  EXPECT_DOUBLE_EQ(readings.at(0).value, 7.0);
  EXPECT_EQ((*reader)->stats().resets, 1u);
}

// A failed read of a zone read before skips that zone once; the next read
// counts the whole interval.
TEST(PowercapReaderTest, TransientReadErrorJoinsTheNextInterval) {
  ScratchDir dir;
  PowercapFixture f(dir.path());
  f.AddZone("intel-rapl:0", "package-0", 1'000'000);
  auto reader = PowercapReader::Open(f.root());
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  std::vector<MetricReading> readings;
  f.SetText("intel-rapl:0", "energy_uj", "garbage\n");
  (*reader)->ReadInto(1, &readings);
  EXPECT_TRUE(readings.empty());
  EXPECT_EQ((*reader)->stats().read_errors, 1u);
  EXPECT_EQ((*reader)->stats().zones, 1u) << "still a zone";
  f.SetEnergy("intel-rapl:0", 4'000'000);
  (*reader)->ReadInto(2, &readings);
  EXPECT_DOUBLE_EQ(readings.at(0).value, 4.0);
}

// A zone whose files go away drops out; when it comes back (a rescan), it
// starts again from its counter.
TEST(PowercapReaderTest, ZoneThatDisappearsDropsOutAndComesBack) {
  ScratchDir dir;
  PowercapFixture f(dir.path());
  f.AddZone("intel-rapl:0", "package-0", 1'000'000);
  f.AddZone("intel-rapl:1", "package-1", 2'000'000);
  f.AddZone("intel-rapl:1:0", "dram", 500'000);
  auto reader = PowercapReader::Open(f.root(), /*rescan_every=*/3);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  std::vector<MetricReading> readings;
  f.RemoveZone("intel-rapl:1:0");
  f.RemoveZone("intel-rapl:1");
  (*reader)->ReadInto(1, &readings);
  EXPECT_EQ(ByZone(readings), (std::map<std::string, double>{{"cpu_energy{package-0}", 1.0}}));
  EXPECT_EQ((*reader)->stats().zones_lost, 2u);
  EXPECT_EQ((*reader)->stats().zones, 1u);
  f.AddZone("intel-rapl:1", "package-1", 2'500'000);
  f.AddZone("intel-rapl:1:0", "dram", 600'000);
  for (int i = 0; i < 3; ++i) (*reader)->ReadInto(2 + i, &readings);
  EXPECT_EQ(ByZone(readings), (std::map<std::string, double>{{"cpu_energy{package-0}", 1.0},
                                                              {"cpu_energy{package-1}", 2.5},
                                                              {"dram_energy{package-1/dram}", 0.6}}));
}

TEST(PowercapReaderTest, NoTreeOrNoReadablePackageIsUnavailableAndSaysSo) {
  ScratchDir dir;
  auto missing = PowercapReader::Open(dir.Path("no-such-dir"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(missing.status().message().find("no powercap tree at " + dir.Path("no-such-dir")), std::string::npos)
      << missing.status().message();
  EXPECT_NE(missing.status().message().find("CPU energy will be estimated"), std::string::npos);

  PowercapFixture f(dir.Path("tree"));
  f.AddZone("intel-rapl:0", "psys", 1'000'000);
  f.AddZone("intel-rapl-mmio:0", "package-0", 1'000'000);
  auto psys_only = PowercapReader::Open(f.root());
  ASSERT_FALSE(psys_only.ok());
  EXPECT_NE(psys_only.status().message().find("no RAPL package zone (intel-rapl:N)"), std::string::npos)
      << psys_only.status().message();

  f.AddZone("intel-rapl:1", "package-0", 1'000'000);
  f.MakeUnreadable("intel-rapl:1");
  auto unreadable = PowercapReader::Open(f.root());
  ASSERT_FALSE(unreadable.ok());
  EXPECT_NE(unreadable.status().message().find("can be read (" + f.root() + "/intel-rapl:1/energy_uj: "),
            std::string::npos)
      << unreadable.status().message();
  EXPECT_NE(unreadable.status().message().find("CPU energy will be estimated"), std::string::npos);
}

// The collector reads once per interval in Poll and hands each window the
// readings since the previous one, with its counters.
TEST(CpuEnergyCollectorTest, WindowsTakeTheReadingsAndTheEndpointTheNewest) {
  ScratchDir dir;
  PowercapFixture f(dir.path());
  f.AddZone("intel-rapl:0", "package-0", 1'000'000);
  f.AddZone("intel-rapl:0:0", "dram", 1'000'000);
  auto reader = PowercapReader::Open(f.root());
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  // The first Poll reads; the next read is an hour away.
  CpuEnergyCollector c(std::move(reader).value(), std::chrono::hours(1));
  ASSERT_TRUE(c.Start().ok());
  f.SetEnergy("intel-rapl:0", 2'000'000);
  ASSERT_TRUE(c.Poll(Collector::Clock::now()).ok());
  f.SetEnergy("intel-rapl:0", 3'000'000);
  ASSERT_TRUE(c.Poll(Collector::Clock::now()).ok());
  EXPECT_EQ(ByZone(c.LatestFromAnyThread()),
            (std::map<std::string, double>{{"cpu_energy{package-0}", 2.0}, {"dram_energy{package-0/dram}", 1.0}}));
  f.SetEnergy("intel-rapl:0", 4'000'000);
  Window w;
  w.final = true;  // reads once more: the counters at the end
  ASSERT_TRUE(c.FinishWindow(&w).ok());
  ASSERT_EQ(w.metrics.size(), 4u);
  EXPECT_EQ(w.metrics[0].metric, "cpu_energy");
  EXPECT_DOUBLE_EQ(w.metrics[0].value, 2.0);
  EXPECT_EQ(w.metrics[1].metric, "dram_energy");
  EXPECT_DOUBLE_EQ(w.metrics[2].value, 4.0);
  EXPECT_LE(w.metrics[0].time_unix_nanos, w.metrics[2].time_unix_nanos);
  std::map<std::string, uint64_t> counters;
  for (const ProfileCounter& pc : w.counters) counters[pc.name] = pc.value;
  EXPECT_EQ(counters["cpu_energy_zones"], 2u);
  EXPECT_EQ(counters["cpu_energy_dropped_readings"], 0u);
  EXPECT_EQ(ByZone(c.LatestFromAnyThread()),
            (std::map<std::string, double>{{"cpu_energy{package-0}", 4.0}, {"dram_energy{package-0/dram}", 1.0}}));
  c.Stop();
}

}  // namespace
}  // namespace warpscope
