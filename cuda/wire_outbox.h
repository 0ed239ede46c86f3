// WireOutbox: the library's side of proto/cuda/cuda_wire.h. It turns
// records into messages of at most WS_CUDA_WIRE_MAX_MESSAGE bytes, keeps the
// per-connection kernel-name dictionary, and queues messages until the link
// thread sends them with non-blocking writes.
//
// Bounded: unsent record messages (KERNELS, MEMOPS, LAUNCHES, WAITS,
// PC_SAMPLES, CUBIN) take at most
// `max_data_bytes`; a message that does not fit is dropped and counted. NAMES,
// STATS and CLOCK messages are never dropped (the dictionary is capped at
// `max_dictionary_bytes`; kernels beyond it get name id 0), so the agent never
// sees a name id it cannot resolve; the link thread bounds them in time by
// closing a connection that made no progress for the stall timeout.
//
// Threading: every method locks the one internal mutex; it is called from the
// CUPTI buffer-completed callback (a CUPTI thread or the link thread) and the
// link thread, never from an application thread's launch path. SendSome holds
// the mutex only across non-blocking send(2) calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "proto/cuda/cuda_wire.h"

namespace warpscope::cuda {

struct WireOutboxLimits {
  size_t max_data_bytes = 8u << 20;
  size_t max_dictionary_bytes = 8u << 20;
};

struct WireOutboxCounters {
  uint64_t records_dropped = 0;
  uint64_t messages_dropped = 0;
  uint64_t names_unsent = 0;
};

// One encoded message; `droppable` for record messages.
struct WireMessage {
  std::vector<uint8_t> bytes;
  uint32_t records = 0;
  bool droppable = false;
};

class WireOutbox {
 public:
  enum class SendResult {
    kIdle,     // nothing queued
    kDrained,  // everything queued was sent
    kBlocked,  // the socket is full (EAGAIN); the rest stays queued
    kBroken,   // the peer is gone or the socket failed
  };

  WireOutbox() = default;
  WireOutbox(const WireOutbox&) = delete;
  WireOutbox& operator=(const WireOutbox&) = delete;

  // A new connection: forgets queued messages and the dictionary.
  void Reset(const WireOutboxLimits& limits);

  // `kernel.name_id` is filled in from `name` (null: unknown).
  void AddKernel(const ws_cuda_kernel& kernel, const char* name);
  void AddMemop(const ws_cuda_memop& memop);
  void AddLaunches(const ws_cuda_launch* launches, size_t count);
  void AddWaits(const ws_cuda_wait* waits, size_t count);
  // `record`'s name ids are filled in from the two names. False, and
  // nothing queued, when either name is null or did not fit the dictionary
  // (the agent could not use the record); a full outbox drops it later,
  // counted like other records.
  bool AddPcSample(const ws_cuda_pc_sample& record, const char* function_name, const char* stall_name);
  // One CUBIN message of `chunk.length` bytes, droppable like records; false
  // when it was dropped.
  bool AddCubinChunk(const ws_cuda_cubin_chunk& chunk, const uint8_t* bytes);
  // STATS or CLOCK: sealed as its own message at once, never dropped.
  void AddControl(ws_cuda_msg_type type, const void* record, size_t size);
  // Seals the open batches so the next SendSome sends them.
  void CloseBatches();

  // Sends queued messages in order with MSG_DONTWAIT | MSG_NOSIGNAL;
  // `sent` (optional) counts the messages that went out.
  SendResult SendSome(int fd, size_t* sent = nullptr);

  // For tests and the in-process encoder tests: takes all sealed messages.
  std::vector<WireMessage> TakeAllForTest();

  WireOutboxCounters counters() const;
  size_t queued_messages() const;
  // Bytes of droppable messages queued.
  size_t queued_data_bytes() const;

 private:
  struct Batch {
    WireMessage message;
    bool open = false;
  };

  void OpenLocked(Batch& batch, ws_cuda_msg_type type, bool droppable);
  void SealLocked(Batch& batch);
  void PushLocked(WireMessage&& message);
  // Appends one fixed-size record, sealing first when it would not fit.
  void AppendRecordLocked(Batch& batch, ws_cuda_msg_type type, bool droppable, const void* record,
                          size_t size);
  uint32_t NameIdLocked(const char* name);

  mutable std::mutex mu_;
  WireOutboxLimits limits_;
  WireOutboxCounters counters_;
  std::deque<WireMessage> queue_;
  size_t queued_data_bytes_ = 0;
  Batch names_, kernels_, memops_, launches_, waits_, pc_samples_;
  // Dictionary: CUPTI's name pointer first (cheap, verified with strcmp), then
  // the text itself.
  std::unordered_map<const char*, uint32_t> id_by_pointer_;
  std::unordered_map<std::string, uint32_t> id_by_name_;
  std::vector<std::string> name_by_id_;  // index = id - 1
  size_t dictionary_bytes_ = 0;
};

// Header of an encoded message (helper shared with the HELLO the link thread
// writes directly).
void WriteWireHeader(uint8_t* out, ws_cuda_msg_type type, uint32_t length, uint32_t count);

}  // namespace warpscope::cuda
