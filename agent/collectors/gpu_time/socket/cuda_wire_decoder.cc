#include "agent/collectors/gpu_time/socket/cuda_wire_decoder.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace warpscope {

namespace {

constexpr size_t kHeaderSize = sizeof(ws_cuda_msg_header);

// Record size of a fixed-record type in a protocol version; 0 for NAMES,
// CUBIN and for types the version does not have.
size_t RecordSize(uint16_t version, uint16_t type) {
  switch (type) {
    case WS_CUDA_MSG_HELLO:
      return sizeof(ws_cuda_hello);
    case WS_CUDA_MSG_CONFIG:
      return ws_cuda_config_size(version);
    case WS_CUDA_MSG_WINDOW:
      return version >= 2 ? sizeof(ws_cuda_window) : 0;
    case WS_CUDA_MSG_KERNELS:
      return version >= 3 ? sizeof(ws_cuda_kernel) : WS_CUDA_KERNEL_V2_SIZE;
    case WS_CUDA_MSG_MEMOPS:
      return sizeof(ws_cuda_memop);
    case WS_CUDA_MSG_LAUNCHES:
      return sizeof(ws_cuda_launch);
    case WS_CUDA_MSG_STATS:
      return version >= 6   ? sizeof(ws_cuda_stats)
             : version == 5 ? WS_CUDA_STATS_V5_SIZE
             : version == 4 ? WS_CUDA_STATS_V4_SIZE
                            : WS_CUDA_STATS_V3_SIZE;
    case WS_CUDA_MSG_WAITS:
      return version >= 4 ? sizeof(ws_cuda_wait) : 0;
    case WS_CUDA_MSG_CLOCK:
      return sizeof(ws_cuda_clock_pair);
    case WS_CUDA_MSG_PC_SAMPLES:
      return version >= 5 ? sizeof(ws_cuda_pc_sample) : 0;
    default:
      return 0;
  }
}

bool IsSingleton(uint16_t type) {
  return type == WS_CUDA_MSG_HELLO || type == WS_CUDA_MSG_CONFIG || type == WS_CUDA_MSG_STATS ||
         type == WS_CUDA_MSG_CLOCK || type == WS_CUDA_MSG_WINDOW;
}

// Records of an older version are a prefix of T: the fields after it read as 0.
template <typename T>
void CopyRecords(const uint8_t* body, uint32_t count, size_t record_size, std::vector<T>* out) {
  if (record_size == sizeof(T)) {
    out->resize(count);
    if (count > 0) std::memcpy(out->data(), body, sizeof(T) * count);
    return;
  }
  out->assign(count, T{});
  for (uint32_t i = 0; i < count; ++i) std::memcpy(&(*out)[i], body + i * record_size, record_size);
}

Status DecodeNames(const uint8_t* body, size_t body_size, uint32_t count, CudaWireMessage* out) {
  size_t at = 0;
  // `count` is untrusted: reserve no more than the body could hold.
  out->names.reserve(std::min<size_t>(count, body_size / sizeof(ws_cuda_name_entry)));
  for (uint32_t i = 0; i < count; ++i) {
    if (body_size - at < sizeof(ws_cuda_name_entry)) {
      return DataLossError("NAMES: entry " + std::to_string(i) + " truncated");
    }
    ws_cuda_name_entry entry;
    std::memcpy(&entry, body + at, sizeof(entry));
    if (entry.name_id == 0) return InvalidArgumentError("NAMES: name id 0 is reserved");
    if (entry.length > WS_CUDA_WIRE_MAX_NAME) {
      return InvalidArgumentError("NAMES: name of " + std::to_string(entry.length) + " bytes");
    }
    const size_t padded = (sizeof(entry) + entry.length + 7) & ~size_t{7};
    if (body_size - at < padded) return DataLossError("NAMES: name " + std::to_string(entry.name_id) + " truncated");
    CudaKernelNameEntry name;
    name.name_id = entry.name_id;
    name.truncated = (entry.flags & WS_CUDA_NAME_FLAG_TRUNCATED) != 0;
    name.name.assign(reinterpret_cast<const char*>(body + at + sizeof(entry)), entry.length);
    out->names.push_back(std::move(name));
    at += padded;
  }
  if (at != body_size) return DataLossError("NAMES: " + std::to_string(body_size - at) + " bytes after the last entry");
  return Status::Ok();
}

Status DecodeCubinChunk(const uint8_t* body, size_t body_size, uint32_t count, CudaWireMessage* out) {
  if (count != 1) return InvalidArgumentError("CUBIN with count " + std::to_string(count));
  if (body_size < sizeof(ws_cuda_cubin_chunk)) return DataLossError("CUBIN: chunk header truncated");
  ws_cuda_cubin_chunk& chunk = out->cubin_chunk;
  std::memcpy(&chunk, body, sizeof(chunk));
  if (chunk.length != body_size - sizeof(chunk)) {
    return DataLossError("CUBIN: chunk says " + std::to_string(chunk.length) + " bytes, message holds " +
                         std::to_string(body_size - sizeof(chunk)));
  }
  if (chunk.total_bytes == 0 || chunk.offset > chunk.total_bytes || chunk.length > chunk.total_bytes - chunk.offset) {
    return InvalidArgumentError("CUBIN: chunk of " + std::to_string(chunk.length) + " bytes at " +
                                std::to_string(chunk.offset) + " of " + std::to_string(chunk.total_bytes));
  }
  const bool last = (chunk.flags & WS_CUDA_CUBIN_FLAG_LAST) != 0;
  if (last != (chunk.offset + chunk.length == chunk.total_bytes)) {
    return InvalidArgumentError("CUBIN: the last-chunk flag disagrees with the chunk's end");
  }
  out->cubin_bytes.assign(body + sizeof(chunk), body + body_size);
  return Status::Ok();
}

}  // namespace

std::string CudaMessageTypeName(uint16_t type) {
  switch (type) {
    case WS_CUDA_MSG_HELLO:
      return "HELLO";
    case WS_CUDA_MSG_CONFIG:
      return "CONFIG";
    case WS_CUDA_MSG_KERNELS:
      return "KERNELS";
    case WS_CUDA_MSG_MEMOPS:
      return "MEMOPS";
    case WS_CUDA_MSG_NAMES:
      return "NAMES";
    case WS_CUDA_MSG_LAUNCHES:
      return "LAUNCHES";
    case WS_CUDA_MSG_STATS:
      return "STATS";
    case WS_CUDA_MSG_CLOCK:
      return "CLOCK";
    case WS_CUDA_MSG_WINDOW:
      return "WINDOW";
    case WS_CUDA_MSG_WAITS:
      return "WAITS";
    case WS_CUDA_MSG_PC_SAMPLES:
      return "PC_SAMPLES";
    case WS_CUDA_MSG_CUBIN:
      return "CUBIN";
    default:
      return "type " + std::to_string(type);
  }
}

StatusOr<CudaWireMessage> DecodeCudaMessage(const uint8_t* data, size_t size) {
  if (size < kHeaderSize) return DataLossError("message of " + std::to_string(size) + " bytes has no header");
  if (size > WS_CUDA_WIRE_MAX_MESSAGE) return InvalidArgumentError("message of " + std::to_string(size) + " bytes");
  ws_cuda_msg_header header;
  std::memcpy(&header, data, sizeof(header));
  if (header.magic != WS_CUDA_WIRE_MAGIC) return InvalidArgumentError("bad magic (not a warpscope CUDA peer)");
  if (header.version < 1 || header.version > WS_CUDA_WIRE_VERSION) {
    return InvalidArgumentError("unsupported protocol version " + std::to_string(header.version));
  }
  if (header.length != size) {
    return DataLossError("header says " + std::to_string(header.length) + " bytes, message has " +
                         std::to_string(size));
  }
  const std::string what = CudaMessageTypeName(header.type);
  CudaWireMessage out;
  out.version = header.version;
  out.type = static_cast<ws_cuda_msg_type>(header.type);
  const uint8_t* body = data + kHeaderSize;
  const size_t body_size = size - kHeaderSize;
  if (header.type == WS_CUDA_MSG_NAMES) {
    RETURN_IF_ERROR(DecodeNames(body, body_size, header.count, &out));
    return out;
  }
  if (header.type == WS_CUDA_MSG_CUBIN && header.version >= 5) {
    RETURN_IF_ERROR(DecodeCubinChunk(body, body_size, header.count, &out));
    return out;
  }
  const size_t record_size = RecordSize(header.version, header.type);
  if (record_size == 0) return InvalidArgumentError("unknown message " + what);
  if (IsSingleton(header.type) && header.count != 1) {
    return InvalidArgumentError(what + " with count " + std::to_string(header.count));
  }
  if (body_size % record_size != 0 || body_size / record_size != header.count) {
    return DataLossError(what + ": " + std::to_string(body_size) + " bytes for " + std::to_string(header.count) +
                         " records of " + std::to_string(record_size));
  }
  switch (header.type) {
    case WS_CUDA_MSG_HELLO:
      std::memcpy(&out.hello, body, sizeof(out.hello));
      if (out.hello.pid == 0) return InvalidArgumentError("HELLO with pid 0");
      break;
    case WS_CUDA_MSG_CONFIG:
      std::memcpy(&out.config, body, record_size);  // older versions: the later fields stay 0
      if (out.config.mode > WS_CUDA_MODE_ADAPTIVE) {
        return InvalidArgumentError("CONFIG with mode " + std::to_string(out.config.mode));
      }
      break;
    case WS_CUDA_MSG_STATS:
      std::memcpy(&out.stats, body, record_size);  // older versions: the later counters stay 0
      if (out.stats.pc_sampling_state > WS_CUDA_PC_SAMPLING_FAILED) {
        return InvalidArgumentError("STATS with PC sampling state " + std::to_string(out.stats.pc_sampling_state));
      }
      if (out.stats.cupti_state > WS_CUDA_CUPTI_OFF) {
        return InvalidArgumentError("STATS with CUPTI state " + std::to_string(out.stats.cupti_state));
      }
      break;
    case WS_CUDA_MSG_CLOCK:
      std::memcpy(&out.clock, body, sizeof(out.clock));
      if (out.clock.host_after_ns < out.clock.host_before_ns) return InvalidArgumentError("CLOCK runs backwards");
      break;
    case WS_CUDA_MSG_WINDOW:
      std::memcpy(&out.window, body, sizeof(out.window));
      if (out.window.on_end_ns < out.window.on_start_ns || out.window.covers_until_ns < out.window.on_end_ns) {
        return InvalidArgumentError("WINDOW whose times are out of order");
      }
      break;
    case WS_CUDA_MSG_KERNELS:
      CopyRecords(body, header.count, record_size, &out.kernels);
      break;
    case WS_CUDA_MSG_MEMOPS:
      CopyRecords(body, header.count, record_size, &out.memops);
      for (const ws_cuda_memop& m : out.memops) {
        if (m.op != WS_CUDA_MEMOP_MEMCPY && m.op != WS_CUDA_MEMOP_MEMSET) {
          return InvalidArgumentError("MEMOPS: op " + std::to_string(m.op));
        }
      }
      break;
    case WS_CUDA_MSG_LAUNCHES:
      CopyRecords(body, header.count, record_size, &out.launches);
      for (const ws_cuda_launch& l : out.launches) {
        if (l.launch_kind < WS_CUDA_LAUNCH_KERNEL || l.launch_kind > WS_CUDA_LAUNCH_GRAPH) {
          return InvalidArgumentError("LAUNCHES: kind " + std::to_string(l.launch_kind));
        }
      }
      break;
    case WS_CUDA_MSG_WAITS:
      CopyRecords(body, header.count, record_size, &out.waits);
      for (const ws_cuda_wait& w : out.waits) {
        if (w.api < WS_CUDA_WAIT_DEVICE_SYNCHRONIZE || w.api > WS_CUDA_WAIT_API_MAX) {
          return InvalidArgumentError("WAITS: api " + std::to_string(w.api));
        }
        if (w.end_ns < w.start_ns) return InvalidArgumentError("WAITS: a wait that ends before it starts");
      }
      break;
    case WS_CUDA_MSG_PC_SAMPLES:
      CopyRecords(body, header.count, record_size, &out.pc_samples);
      for (const ws_cuda_pc_sample& p : out.pc_samples) {
        if (p.function_name_id == 0 || p.stall_name_id == 0) {
          return InvalidArgumentError("PC_SAMPLES: a record without its function or stall reason name");
        }
      }
      break;
    default:
      break;
  }
  return out;
}

std::vector<uint8_t> EncodeCudaMessage(ws_cuda_msg_type type, const void* records, size_t record_size,
                                       uint32_t count) {
  const size_t length = kHeaderSize + record_size * count;
  std::vector<uint8_t> out(length);
  ws_cuda_msg_header header{};
  header.magic = WS_CUDA_WIRE_MAGIC;
  header.version = WS_CUDA_WIRE_VERSION;
  header.type = static_cast<uint16_t>(type);
  header.length = static_cast<uint32_t>(length);
  header.count = count;
  std::memcpy(out.data(), &header, sizeof(header));
  if (length > kHeaderSize) std::memcpy(out.data() + kHeaderSize, records, length - kHeaderSize);
  return out;
}

ws_cuda_config DefaultCudaConfig() {
  ws_cuda_config config{};
  config.mode = WS_CUDA_MODE_EXACT;
  config.flags = WS_CUDA_CONFIG_MEMCPY | WS_CUDA_CONFIG_MEMSET;
  return config;
}

std::vector<uint8_t> EncodeCudaConfig(const ws_cuda_config& config, uint16_t peer_version) {
  const uint16_t version = std::clamp<uint16_t>(peer_version, 1, WS_CUDA_WIRE_VERSION);
  std::vector<uint8_t> out =
      EncodeCudaMessage(WS_CUDA_MSG_CONFIG, &config, ws_cuda_config_size(version), 1);
  std::memcpy(out.data() + offsetof(ws_cuda_msg_header, version), &version, sizeof(version));
  return out;
}

}  // namespace warpscope
