// Decoding and validation of proto/cuda/cuda_wire.h messages on the agent
// side, and encoding of what the agent sends (CONFIG).
//
// DecodeCudaMessage is stateless and total: any byte string either decodes
// into one CudaWireMessage or yields a Status saying what is wrong with it
// (the socket server then closes that connection and counts the error). Per-
// connection rules (HELLO first, name ids defined before use) are checked by
// CudaSocketServer, which holds the state.
//
// Threading: plain functions, callable from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "proto/cuda/cuda_wire.h"

namespace warpscope {

struct CudaKernelNameEntry {
  uint32_t name_id = 0;
  bool truncated = false;
  std::string name;  // mangled, as CUPTI reported it
};

// One decoded message. `type` says which member is filled; the others stay
// empty.
struct CudaWireMessage {
  uint16_t version = 0;
  ws_cuda_msg_type type = WS_CUDA_MSG_HELLO;
  ws_cuda_hello hello{};
  ws_cuda_config config{};
  ws_cuda_stats stats{};
  ws_cuda_clock_pair clock{};
  ws_cuda_window window{};
  std::vector<ws_cuda_kernel> kernels;
  std::vector<ws_cuda_memop> memops;
  std::vector<ws_cuda_launch> launches;
  std::vector<ws_cuda_wait> waits;
  std::vector<CudaKernelNameEntry> names;
  std::vector<ws_cuda_pc_sample> pc_samples;
  // CUBIN: the chunk's header and its bytes.
  ws_cuda_cubin_chunk cubin_chunk{};
  std::vector<uint8_t> cubin_bytes;
};

// Validates and decodes one whole datagram. Errors are kDataLoss (truncated,
// sizes that disagree) or kInvalidArgument (bad magic, unknown version or
// type, out-of-range values).
StatusOr<CudaWireMessage> DecodeCudaMessage(const uint8_t* data, size_t size);

// Exact mode, memcpy and memset recorded, every other field the library's
// default.
ws_cuda_config DefaultCudaConfig();

// The CONFIG message the agent sends.
// A CONFIG in the protocol version of the peer (its HELLO's): a library
// accepts only versions it knows, so an older library gets its own version
// (a version 1 CONFIG is the first WS_CUDA_CONFIG_V1_SIZE bytes, versions
// 2-4 the first WS_CUDA_CONFIG_V4_SIZE).
std::vector<uint8_t> EncodeCudaConfig(const ws_cuda_config& config, uint16_t peer_version = WS_CUDA_WIRE_VERSION);

// Any message with `count` fixed-size records laid end to end: the test side's
// encoder for HELLO, STATS and the like (the library has its own, WireOutbox).
std::vector<uint8_t> EncodeCudaMessage(ws_cuda_msg_type type, const void* records, size_t record_size,
                                       uint32_t count);

// "KERNELS" for WS_CUDA_MSG_KERNELS; "type 42" for unknown ones.
std::string CudaMessageTypeName(uint16_t type);

}  // namespace warpscope
