#include "agent/collectors/gpu_time/socket/cuda_wire_decoder.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "cuda/wire_outbox.h"

namespace warpscope {
namespace {

using cuda::WireMessage;
using cuda::WireOutbox;

ws_cuda_kernel Kernel(uint32_t correlation, uint64_t start, uint64_t duration) {
  ws_cuda_kernel k{};
  k.start_ns = start;
  k.end_ns = start + duration;
  k.correlation_id = correlation;
  k.stream_id = 7;
  k.grid_x = 4;
  k.block_x = 128;
  k.registers_per_thread = 40;
  return k;
}

std::vector<WireMessage> Encode(WireOutbox& outbox) {
  outbox.CloseBatches();
  return outbox.TakeAllForTest();
}

StatusOr<CudaWireMessage> Decode(const std::vector<uint8_t>& bytes) {
  return DecodeCudaMessage(bytes.data(), bytes.size());
}

TEST(CudaWireDecoder, RoundTripsEveryMessageType) {
  WireOutbox outbox;
  outbox.Reset({});
  outbox.AddKernel(Kernel(11, 1000, 50), "_Z6kernelAv");
  outbox.AddKernel(Kernel(12, 2000, 60), "_Z6kernelBv");
  outbox.AddKernel(Kernel(13, 3000, 70), "_Z6kernelAv");
  ws_cuda_memop memop{};
  memop.op = WS_CUDA_MEMOP_MEMCPY;
  memop.bytes = 4096;
  outbox.AddMemop(memop);
  ws_cuda_launch launch{};
  launch.correlation_id = 11;
  launch.inner_correlation_id = 12;
  launch.launch_kind = WS_CUDA_LAUNCH_KERNEL;
  outbox.AddLaunches(&launch, 1);
  ws_cuda_stats stats{};
  stats.launches_seen = 3;
  outbox.AddControl(WS_CUDA_MSG_STATS, &stats, sizeof(stats));
  const std::vector<WireMessage> messages = Encode(outbox);
  ASSERT_EQ(messages.size(), 5u);  // STATS (sealed at once), NAMES, KERNELS, MEMOPS, LAUNCHES

  std::vector<ws_cuda_msg_type> types;
  for (const WireMessage& m : messages) {
    StatusOr<CudaWireMessage> decoded = Decode(m.bytes);
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    types.push_back(decoded->type);
    switch (decoded->type) {
      case WS_CUDA_MSG_NAMES:
        ASSERT_EQ(decoded->names.size(), 2u);
        EXPECT_EQ(decoded->names[0].name_id, 1u);
        EXPECT_EQ(decoded->names[0].name, "_Z6kernelAv");
        EXPECT_EQ(decoded->names[1].name, "_Z6kernelBv");
        break;
      case WS_CUDA_MSG_KERNELS:
        ASSERT_EQ(decoded->kernels.size(), 3u);
        EXPECT_EQ(decoded->kernels[0].name_id, 1u);
        EXPECT_EQ(decoded->kernels[1].name_id, 2u);
        EXPECT_EQ(decoded->kernels[2].name_id, 1u);  // sent once per connection
        EXPECT_EQ(decoded->kernels[2].end_ns - decoded->kernels[2].start_ns, 70u);
        EXPECT_EQ(decoded->kernels[1].registers_per_thread, 40);
        break;
      case WS_CUDA_MSG_MEMOPS:
        ASSERT_EQ(decoded->memops.size(), 1u);
        EXPECT_EQ(decoded->memops[0].bytes, 4096u);
        break;
      case WS_CUDA_MSG_LAUNCHES:
        ASSERT_EQ(decoded->launches.size(), 1u);
        EXPECT_EQ(decoded->launches[0].inner_correlation_id, 12u);
        break;
      case WS_CUDA_MSG_STATS:
        EXPECT_EQ(decoded->stats.launches_seen, 3u);
        break;
      default:
        ADD_FAILURE() << "unexpected " << CudaMessageTypeName(decoded->type);
    }
  }
  // Names always travel before the kernels that use them.
  auto position = [&](ws_cuda_msg_type t) { return std::find(types.begin(), types.end(), t) - types.begin(); };
  EXPECT_LT(position(WS_CUDA_MSG_NAMES), position(WS_CUDA_MSG_KERNELS));
}

TEST(CudaWireDecoder, ConfigRoundTrips) {
  ws_cuda_config config{};
  config.mode = WS_CUDA_MODE_DUTY;
  config.duty_on_ms = 50;
  config.duty_period_ms = 500;
  StatusOr<CudaWireMessage> decoded = Decode(EncodeCudaConfig(config));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->type, WS_CUDA_MSG_CONFIG);
  EXPECT_EQ(decoded->config.duty_on_ms, 50u);
  EXPECT_EQ(decoded->config.duty_period_ms, 500u);
}

// Version 1 peers: a CONFIG of 48 bytes (its later fields read as 0), and no WINDOW.
TEST(CudaWireDecoder, ReadsVersionOneAndVersionTwoOnlyMessages) {
  ws_cuda_config config{};
  config.mode = WS_CUDA_MODE_EXACT;
  config.duty_on_ms = 70;
  config.overhead_budget_ppm = 12345;
  std::vector<uint8_t> v1 = EncodeCudaMessage(WS_CUDA_MSG_CONFIG, &config, WS_CUDA_CONFIG_V1_SIZE, 1);
  const uint16_t one = 1;
  std::memcpy(v1.data() + 4, &one, sizeof(one));
  StatusOr<CudaWireMessage> old = Decode(v1);
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  EXPECT_EQ(old->config.duty_on_ms, 70u);
  EXPECT_EQ(old->config.overhead_budget_ppm, 0u);

  ws_cuda_window window{};
  window.on_start_ns = 100;
  window.on_end_ns = 200;
  window.covers_until_ns = 1000;
  window.launches_seen = 7;
  std::vector<uint8_t> w = EncodeCudaMessage(WS_CUDA_MSG_WINDOW, &window, sizeof(window), 1);
  StatusOr<CudaWireMessage> decoded = Decode(w);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->window.covers_until_ns, 1000u);
  EXPECT_EQ(decoded->window.launches_seen, 7u);
  std::memcpy(w.data() + 4, &one, sizeof(one));
  EXPECT_FALSE(Decode(w).ok()) << "WINDOW is a version 2 message";
  window.covers_until_ns = 150;  // before the window's end
  EXPECT_FALSE(Decode(EncodeCudaMessage(WS_CUDA_MSG_WINDOW, &window, sizeof(window), 1)).ok());
}

// Version 2 peers: KERNELS records of 88 bytes, without the launch's time and
// thread (read as 0).
TEST(CudaWireDecoder, ReadsVersionTwoKernels) {
  ws_cuda_kernel k[2]{};
  k[0].correlation_id = 5;
  k[1].correlation_id = 6;
  k[1].attach_epoch = 3;
  k[0].launch_host_ns = k[1].launch_host_ns = 77;  // past the version 2 prefix: not sent
  std::vector<uint8_t> packed(2 * WS_CUDA_KERNEL_V2_SIZE);
  std::memcpy(packed.data(), &k[0], WS_CUDA_KERNEL_V2_SIZE);
  std::memcpy(packed.data() + WS_CUDA_KERNEL_V2_SIZE, &k[1], WS_CUDA_KERNEL_V2_SIZE);
  std::vector<uint8_t> v2 = EncodeCudaMessage(WS_CUDA_MSG_KERNELS, packed.data(), WS_CUDA_KERNEL_V2_SIZE, 2);
  const uint16_t two = 2;
  std::memcpy(v2.data() + 4, &two, sizeof(two));
  StatusOr<CudaWireMessage> old = Decode(v2);
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  ASSERT_EQ(old->kernels.size(), 2u);
  EXPECT_EQ(old->kernels[1].correlation_id, 6u);
  EXPECT_EQ(old->kernels[1].attach_epoch, 3u);
  EXPECT_EQ(old->kernels[0].launch_host_ns, 0u);
  EXPECT_EQ(old->kernels[1].launch_tid, 0u);
  // The same bytes under version 3 are too short for their count.
  std::vector<uint8_t> v3 = EncodeCudaMessage(WS_CUDA_MSG_KERNELS, packed.data(), WS_CUDA_KERNEL_V2_SIZE, 2);
  EXPECT_EQ(Decode(v3).status().code(), StatusCode::kDataLoss);
}

// Version 4: WAITS, and STATS with the wait counters; a version 3 STATS is
// the first 112 bytes (the wait counters read as 0), and a version 3 peer
// has no WAITS.
TEST(CudaWireDecoder, WaitsAndTheStatsOfEarlierVersions) {
  ws_cuda_wait waits[2] = {};
  waits[0].api = WS_CUDA_WAIT_STREAM_SYNCHRONIZE;
  waits[0].start_ns = 10;
  waits[0].end_ns = 30;
  waits[1].api = WS_CUDA_WAIT_CU_MEMCPY;
  waits[1].flags = WS_CUDA_WAIT_FLAG_SAMPLED;
  StatusOr<CudaWireMessage> decoded = Decode(EncodeCudaMessage(WS_CUDA_MSG_WAITS, waits, sizeof(waits[0]), 2));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  ASSERT_EQ(decoded->waits.size(), 2u);
  EXPECT_EQ(decoded->waits[0].end_ns, 30u);
  EXPECT_EQ(decoded->waits[1].flags, WS_CUDA_WAIT_FLAG_SAMPLED);
  waits[1].api = WS_CUDA_WAIT_API_MAX + 1;
  EXPECT_EQ(Decode(EncodeCudaMessage(WS_CUDA_MSG_WAITS, waits, sizeof(waits[0]), 2)).status().code(),
            StatusCode::kInvalidArgument);
  waits[1].api = WS_CUDA_WAIT_MEMCPY;
  waits[1].start_ns = 5;
  waits[1].end_ns = 4;
  EXPECT_EQ(Decode(EncodeCudaMessage(WS_CUDA_MSG_WAITS, waits, sizeof(waits[0]), 2)).status().code(),
            StatusCode::kInvalidArgument);
  const uint16_t three = 3;
  std::vector<uint8_t> v3_waits = EncodeCudaMessage(WS_CUDA_MSG_WAITS, waits, sizeof(waits[0]), 1);
  std::memcpy(v3_waits.data() + 4, &three, sizeof(three));
  EXPECT_EQ(Decode(v3_waits).status().code(), StatusCode::kInvalidArgument);

  ws_cuda_stats stats{};
  stats.names_unsent = 9;
  stats.waits_seen = 77;
  std::vector<uint8_t> v3_stats = EncodeCudaMessage(WS_CUDA_MSG_STATS, &stats, WS_CUDA_STATS_V3_SIZE, 1);
  std::memcpy(v3_stats.data() + 4, &three, sizeof(three));
  StatusOr<CudaWireMessage> old = Decode(v3_stats);
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  EXPECT_EQ(old->stats.names_unsent, 9u);
  EXPECT_EQ(old->stats.waits_seen, 0u);
  StatusOr<CudaWireMessage> now = Decode(EncodeCudaMessage(WS_CUDA_MSG_STATS, &stats, sizeof(stats), 1));
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(now->stats.waits_seen, 77u);
}

// An older library reads only its own version: the agent answers in it.
TEST(CudaWireDecoder, ConfigGoesOutInThePeersVersion) {
  ws_cuda_config config{};
  config.mode = WS_CUDA_MODE_ADAPTIVE;
  config.overhead_budget_ppm = 777;
  config.pc_sampling_period_log2 = 19;
  for (uint16_t peer : {1, 2, 3, 4, 5, 9}) {
    const std::vector<uint8_t> bytes = EncodeCudaConfig(config, peer);
    ws_cuda_msg_header header{};
    std::memcpy(&header, bytes.data(), sizeof(header));
    const uint16_t want = std::min<uint16_t>(peer, WS_CUDA_WIRE_VERSION);
    EXPECT_EQ(header.version, want) << peer;
    const size_t size = want == 1 ? WS_CUDA_CONFIG_V1_SIZE : want <= 4 ? WS_CUDA_CONFIG_V4_SIZE : sizeof(config);
    EXPECT_EQ(bytes.size(), sizeof(header) + size) << peer;
    StatusOr<CudaWireMessage> decoded = Decode(bytes);
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    EXPECT_EQ(decoded->config.overhead_budget_ppm, want == 1 ? 0u : 777u);
    EXPECT_EQ(decoded->config.pc_sampling_period_log2, want < 5 ? 0u : 19u);
  }
}

// Version 5: PC samples (names by id, checked by the server) and cubin
// chunks whose sizes must agree; a version 4 STATS reads without the PC
// sampling counters.
TEST(CudaWireDecoder, PcSamplesCubinChunksAndVersion4Stats) {
  ws_cuda_pc_sample samples[2] = {};
  samples[0] = {0xabc, 0x40, 123, 1, 2, 7, 0};
  samples[1] = {0xabc, 0x80, 123, 1, 3, 9, 1};
  StatusOr<CudaWireMessage> m = Decode(EncodeCudaMessage(WS_CUDA_MSG_PC_SAMPLES, samples, sizeof(samples[0]), 2));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_EQ(m->pc_samples.size(), 2u);
  EXPECT_EQ(m->pc_samples[1].pc_offset, 0x80u);
  EXPECT_EQ(m->pc_samples[1].samples, 9u);
  samples[0].stall_name_id = 0;
  EXPECT_EQ(Decode(EncodeCudaMessage(WS_CUDA_MSG_PC_SAMPLES, samples, sizeof(samples[0]), 2)).status().code(),
            StatusCode::kInvalidArgument);

  auto chunk_message = [](ws_cuda_cubin_chunk chunk, const std::string& bytes) {
    std::string body(reinterpret_cast<const char*>(&chunk), sizeof(chunk));
    body += bytes;
    return EncodeCudaMessage(WS_CUDA_MSG_CUBIN, body.data(), body.size(), 1);
  };
  ws_cuda_cubin_chunk chunk{0x77, 10, 6, 4, WS_CUDA_CUBIN_FLAG_LAST};
  m = Decode(chunk_message(chunk, "wxyz"));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->cubin_chunk.cubin_crc, 0x77u);
  EXPECT_EQ(std::string(m->cubin_bytes.begin(), m->cubin_bytes.end()), "wxyz");
  EXPECT_EQ(Decode(chunk_message(chunk, "wxy")).status().code(), StatusCode::kDataLoss) << "length disagrees";
  chunk.flags = 0;
  EXPECT_EQ(Decode(chunk_message(chunk, "wxyz")).status().code(), StatusCode::kInvalidArgument) << "last, unflagged";
  chunk = {0x77, 10, 8, 4, WS_CUDA_CUBIN_FLAG_LAST};
  EXPECT_EQ(Decode(chunk_message(chunk, "wxyz")).status().code(), StatusCode::kInvalidArgument) << "past the end";
  chunk = {0x77, 0, 0, 0, WS_CUDA_CUBIN_FLAG_LAST};
  EXPECT_EQ(Decode(chunk_message(chunk, "")).status().code(), StatusCode::kInvalidArgument) << "empty cubin";

  ws_cuda_stats stats{};
  stats.waits_seen = 5;
  stats.pc_samples = 99;
  std::vector<uint8_t> v4 = EncodeCudaMessage(WS_CUDA_MSG_STATS, &stats, WS_CUDA_STATS_V4_SIZE, 1);
  const uint16_t version = 4;
  std::memcpy(v4.data() + offsetof(ws_cuda_msg_header, version), &version, sizeof(version));
  m = Decode(v4);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->stats.waits_seen, 5u);
  EXPECT_EQ(m->stats.pc_samples, 0u);
  // A version 5 library: the CUPTI hold counters read as 0.
  stats.cupti_yields = 3;
  stats.cupti_state = WS_CUDA_CUPTI_ASIDE;
  std::vector<uint8_t> v5 = EncodeCudaMessage(WS_CUDA_MSG_STATS, &stats, WS_CUDA_STATS_V5_SIZE, 1);
  const uint16_t five = 5;
  std::memcpy(v5.data() + offsetof(ws_cuda_msg_header, version), &five, sizeof(five));
  m = Decode(v5);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->stats.pc_samples, 99u);
  EXPECT_EQ(m->stats.cupti_yields, 0u);
  EXPECT_EQ(m->stats.cupti_state, 0u);
  m = Decode(EncodeCudaMessage(WS_CUDA_MSG_STATS, &stats, sizeof(stats), 1));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->stats.cupti_yields, 3u);
  EXPECT_EQ(m->stats.cupti_state, static_cast<uint32_t>(WS_CUDA_CUPTI_ASIDE));
  stats.cupti_state = 4;
  EXPECT_EQ(Decode(EncodeCudaMessage(WS_CUDA_MSG_STATS, &stats, sizeof(stats), 1)).status().code(),
            StatusCode::kInvalidArgument);
  stats.cupti_state = 0;
  stats.pc_sampling_state = 9;
  EXPECT_EQ(Decode(EncodeCudaMessage(WS_CUDA_MSG_STATS, &stats, sizeof(stats), 1)).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(CudaWireDecoder, RejectsMalformedHeaders) {
  ws_cuda_hello hello{};
  hello.pid = 42;
  const std::vector<uint8_t> good = EncodeCudaMessage(WS_CUDA_MSG_HELLO, &hello, sizeof(hello), 1);
  ASSERT_TRUE(Decode(good).ok());

  auto with = [&](size_t offset, uint32_t value, size_t width) {
    std::vector<uint8_t> bad = good;
    std::memcpy(bad.data() + offset, &value, width);
    return Decode(bad);
  };
  EXPECT_EQ(with(0, 0xdeadbeef, 4).status().code(), StatusCode::kInvalidArgument);  // magic
  EXPECT_EQ(with(4, WS_CUDA_WIRE_VERSION + 1, 2).status().code(), StatusCode::kInvalidArgument);  // version
  EXPECT_EQ(with(4, 0, 2).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(with(6, 99, 2).status().code(), StatusCode::kInvalidArgument);          // type
  EXPECT_EQ(with(8, 1000, 4).status().code(), StatusCode::kDataLoss);               // length
  EXPECT_FALSE(with(12, 2, 4).ok());                                                // count of a singleton
  EXPECT_FALSE(Decode(std::vector<uint8_t>(3, 0)).ok());
  EXPECT_FALSE(DecodeCudaMessage(nullptr, 0).ok());

  hello.pid = 0;
  EXPECT_FALSE(Decode(EncodeCudaMessage(WS_CUDA_MSG_HELLO, &hello, sizeof(hello), 1)).ok());
  ws_cuda_config config{};
  config.mode = 4;
  EXPECT_FALSE(Decode(EncodeCudaConfig(config)).ok());
  std::vector<uint8_t> huge(WS_CUDA_WIRE_MAX_MESSAGE + 8, 0);
  EXPECT_FALSE(Decode(huge).ok());
}

TEST(CudaWireDecoder, RejectsRecordCountsThatDisagreeWithTheLength) {
  ws_cuda_kernel kernels[3] = {Kernel(1, 0, 1), Kernel(2, 0, 1), Kernel(3, 0, 1)};
  std::vector<uint8_t> bytes = EncodeCudaMessage(WS_CUDA_MSG_KERNELS, kernels, sizeof(ws_cuda_kernel), 3);
  ASSERT_TRUE(Decode(bytes).ok());
  const uint32_t four = 4;
  std::memcpy(bytes.data() + 12, &four, 4);
  EXPECT_EQ(Decode(bytes).status().code(), StatusCode::kDataLoss);
}

TEST(CudaWireDecoder, RejectsBadNameEntries) {
  WireOutbox outbox;
  outbox.Reset({});
  outbox.AddKernel(Kernel(1, 0, 1), "_Z3foov");
  std::vector<WireMessage> messages = Encode(outbox);
  ASSERT_EQ(messages.size(), 2u);
  const std::vector<uint8_t> names = messages[0].bytes;
  ASSERT_TRUE(Decode(names).ok());

  std::vector<uint8_t> zero_id = names;
  std::memset(zero_id.data() + sizeof(ws_cuda_msg_header), 0, 4);
  EXPECT_FALSE(Decode(zero_id).ok());

  std::vector<uint8_t> long_name = names;
  const uint16_t too_long = 60000;
  std::memcpy(long_name.data() + sizeof(ws_cuda_msg_header) + 4, &too_long, 2);
  EXPECT_FALSE(Decode(long_name).ok());

  std::vector<uint8_t> trailing = names;
  trailing.resize(trailing.size() + 8, 0);
  const uint32_t length = static_cast<uint32_t>(trailing.size());
  std::memcpy(trailing.data() + 8, &length, 4);
  EXPECT_EQ(Decode(trailing).status().code(), StatusCode::kDataLoss);

  std::vector<uint8_t> more = names;
  const uint32_t two = 2;
  std::memcpy(more.data() + 12, &two, 4);
  EXPECT_EQ(Decode(more).status().code(), StatusCode::kDataLoss);
}

// Every prefix of every valid message is rejected (the length field no
// longer matches), and no prefix crashes the decoder.
TEST(CudaWireDecoder, EveryTruncationIsRejected) {
  WireOutbox outbox;
  outbox.Reset({});
  for (uint32_t i = 0; i < 5; ++i) outbox.AddKernel(Kernel(i, i, 1), i % 2 ? "_Z1av" : "_Z1bv");
  ws_cuda_clock_pair clock{1, 2, 3};
  outbox.AddControl(WS_CUDA_MSG_CLOCK, &clock, sizeof(clock));
  for (const WireMessage& m : Encode(outbox)) {
    ASSERT_TRUE(Decode(m.bytes).ok());
    for (size_t n = 0; n < m.bytes.size(); ++n) {
      EXPECT_FALSE(DecodeCudaMessage(m.bytes.data(), n).ok()) << "prefix " << n;
    }
  }
}

// Random corruption: decoding either fails cleanly or yields a message.
TEST(CudaWireDecoder, SurvivesRandomCorruption) {
  WireOutbox outbox;
  outbox.Reset({});
  for (uint32_t i = 0; i < 20; ++i) outbox.AddKernel(Kernel(i, i, 1), i % 3 ? "_Z1av" : "_Z4longv");
  std::vector<WireMessage> messages = Encode(outbox);
  std::mt19937 rng(7);
  int decoded = 0;
  for (int round = 0; round < 5000; ++round) {
    std::vector<uint8_t> bytes = messages[round % messages.size()].bytes;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) bytes[rng() % bytes.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
    if (DecodeCudaMessage(bytes.data(), bytes.size()).ok()) decoded++;
  }
  EXPECT_GT(decoded, 0);  // flips inside records are not detectable, and need not be
}

TEST(WireOutbox, DropsRecordMessagesButNeverNamesWhenFull) {
  WireOutbox outbox;
  cuda::WireOutboxLimits limits;
  limits.max_data_bytes = 3 * WS_CUDA_WIRE_MAX_MESSAGE;
  outbox.Reset(limits);
  for (uint32_t i = 0; i < 20000; ++i) outbox.AddKernel(Kernel(i, i, 1), ("_Z1k" + std::to_string(i % 50)).c_str());
  std::vector<WireMessage> messages = Encode(outbox);
  size_t kernels = 0, names = 0;
  for (const WireMessage& m : messages) {
    ASSERT_LE(m.bytes.size(), WS_CUDA_WIRE_MAX_MESSAGE);
    StatusOr<CudaWireMessage> d = Decode(m.bytes);
    ASSERT_TRUE(d.ok());
    kernels += d->kernels.size();
    names += d->names.size();
  }
  EXPECT_EQ(names, 50u);
  EXPECT_LT(kernels, 20000u);
  EXPECT_GT(kernels, 0u);
  EXPECT_EQ(outbox.counters().records_dropped + kernels, 20000u);
  EXPECT_GT(outbox.counters().messages_dropped, 0u);
}

TEST(WireOutbox, CutsLongNamesAndCapsTheDictionary) {
  WireOutbox outbox;
  cuda::WireOutboxLimits limits;
  limits.max_dictionary_bytes = 2 * WS_CUDA_WIRE_MAX_NAME + 5;
  outbox.Reset(limits);
  const std::string huge(WS_CUDA_WIRE_MAX_NAME + 500, 'x');
  outbox.AddKernel(Kernel(1, 0, 1), huge.c_str());
  outbox.AddKernel(Kernel(2, 0, 1), (huge + "y").c_str());  // same first 16 KiB: same id
  const std::string other(WS_CUDA_WIRE_MAX_NAME, 'z');
  outbox.AddKernel(Kernel(3, 0, 1), other.c_str());
  outbox.AddKernel(Kernel(4, 0, 1), "_Z9overflowv");  // beyond the cap
  outbox.AddKernel(Kernel(5, 0, 1), nullptr);
  std::vector<uint32_t> ids;
  for (const WireMessage& m : Encode(outbox)) {
    StatusOr<CudaWireMessage> d = Decode(m.bytes);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    for (const auto& n : d->names) {
      if (n.name_id == 1) {
        EXPECT_TRUE(n.truncated);
        EXPECT_EQ(n.name.size(), WS_CUDA_WIRE_MAX_NAME);
      }
    }
    for (const auto& k : d->kernels) ids.push_back(k.name_id);
  }
  EXPECT_EQ(ids, (std::vector<uint32_t>{1, 1, 2, 0, 0}));
  EXPECT_EQ(outbox.counters().names_unsent, 1u);
}

}  // namespace
}  // namespace warpscope
