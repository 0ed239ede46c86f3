#include "cuda/wire_outbox.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace warpscope::cuda {

namespace {
constexpr size_t kHeaderSize = sizeof(ws_cuda_msg_header);

size_t Padded8(size_t n) { return (n + 7) & ~size_t{7}; }
}  // namespace

void WriteWireHeader(uint8_t* out, ws_cuda_msg_type type, uint32_t length, uint32_t count) {
  ws_cuda_msg_header header{};
  header.magic = WS_CUDA_WIRE_MAGIC;
  header.version = WS_CUDA_WIRE_VERSION;
  header.type = static_cast<uint16_t>(type);
  header.length = length;
  header.count = count;
  std::memcpy(out, &header, sizeof(header));
}

void WireOutbox::Reset(const WireOutboxLimits& limits) {
  std::lock_guard<std::mutex> lock(mu_);
  limits_ = limits;
  queue_.clear();
  queued_data_bytes_ = 0;
  names_ = Batch{};
  kernels_ = Batch{};
  memops_ = Batch{};
  launches_ = Batch{};
  waits_ = Batch{};
  pc_samples_ = Batch{};
  id_by_pointer_.clear();
  id_by_name_.clear();
  name_by_id_.clear();
  dictionary_bytes_ = 0;
}

void WireOutbox::OpenLocked(Batch& batch, ws_cuda_msg_type type, bool droppable) {
  batch.message = WireMessage{};
  batch.message.bytes.reserve(WS_CUDA_WIRE_MAX_MESSAGE);
  batch.message.bytes.resize(kHeaderSize);
  batch.message.droppable = droppable;
  WriteWireHeader(batch.message.bytes.data(), type, kHeaderSize, 0);
  batch.open = true;
}

void WireOutbox::SealLocked(Batch& batch) {
  if (!batch.open) return;
  batch.open = false;
  if (batch.message.records == 0) return;
  ws_cuda_msg_header header;
  std::memcpy(&header, batch.message.bytes.data(), sizeof(header));
  header.length = static_cast<uint32_t>(batch.message.bytes.size());
  header.count = batch.message.records;
  std::memcpy(batch.message.bytes.data(), &header, sizeof(header));
  PushLocked(std::move(batch.message));
}

void WireOutbox::PushLocked(WireMessage&& message) {
  if (message.droppable) {
    if (queued_data_bytes_ + message.bytes.size() > limits_.max_data_bytes) {
      counters_.messages_dropped++;
      counters_.records_dropped += message.records;
      return;
    }
    queued_data_bytes_ += message.bytes.size();
  }
  queue_.push_back(std::move(message));
}

void WireOutbox::AppendRecordLocked(Batch& batch, ws_cuda_msg_type type, bool droppable,
                                    const void* record, size_t size) {
  if (batch.open && batch.message.bytes.size() + size > WS_CUDA_WIRE_MAX_MESSAGE) {
    // A kernel or PC batch may use names that are still in the open NAMES batch.
    if (&batch == &kernels_ || &batch == &pc_samples_) SealLocked(names_);
    SealLocked(batch);
  }
  if (!batch.open) OpenLocked(batch, type, droppable);
  const auto* bytes = static_cast<const uint8_t*>(record);
  batch.message.bytes.insert(batch.message.bytes.end(), bytes, bytes + size);
  batch.message.records++;
}

uint32_t WireOutbox::NameIdLocked(const char* name) {
  if (name == nullptr) return 0;
  auto by_pointer = id_by_pointer_.find(name);
  if (by_pointer != id_by_pointer_.end() &&
      std::strcmp(name_by_id_[by_pointer->second - 1].c_str(), name) == 0) {
    return by_pointer->second;
  }
  size_t length = strnlen(name, WS_CUDA_WIRE_MAX_NAME + 1);
  uint16_t flags = 0;
  if (length > WS_CUDA_WIRE_MAX_NAME) {
    length = WS_CUDA_WIRE_MAX_NAME;
    flags |= WS_CUDA_NAME_FLAG_TRUNCATED;
  }
  std::string text(name, length);
  auto by_name = id_by_name_.find(text);
  if (by_name != id_by_name_.end()) {
    id_by_pointer_[name] = by_name->second;
    return by_name->second;
  }
  if (dictionary_bytes_ + length > limits_.max_dictionary_bytes) {
    counters_.names_unsent++;
    return 0;
  }
  const uint32_t id = static_cast<uint32_t>(name_by_id_.size() + 1);
  const size_t entry_size = Padded8(sizeof(ws_cuda_name_entry) + length);
  if (names_.open && names_.message.bytes.size() + entry_size > WS_CUDA_WIRE_MAX_MESSAGE) {
    SealLocked(names_);
  }
  if (!names_.open) OpenLocked(names_, WS_CUDA_MSG_NAMES, /*droppable=*/false);
  ws_cuda_name_entry entry{};
  entry.name_id = id;
  entry.length = static_cast<uint16_t>(length);
  entry.flags = flags;
  auto& bytes = names_.message.bytes;
  const size_t at = bytes.size();
  bytes.resize(at + entry_size, 0);
  std::memcpy(bytes.data() + at, &entry, sizeof(entry));
  std::memcpy(bytes.data() + at + sizeof(entry), text.data(), length);
  names_.message.records++;

  dictionary_bytes_ += length;
  name_by_id_.push_back(text);
  id_by_name_.emplace(std::move(text), id);
  id_by_pointer_[name] = id;
  return id;
}

void WireOutbox::AddKernel(const ws_cuda_kernel& kernel, const char* name) {
  std::lock_guard<std::mutex> lock(mu_);
  ws_cuda_kernel record = kernel;
  record.name_id = NameIdLocked(name);
  AppendRecordLocked(kernels_, WS_CUDA_MSG_KERNELS, true, &record, sizeof(record));
}

void WireOutbox::AddMemop(const ws_cuda_memop& memop) {
  std::lock_guard<std::mutex> lock(mu_);
  AppendRecordLocked(memops_, WS_CUDA_MSG_MEMOPS, true, &memop, sizeof(memop));
}

void WireOutbox::AddLaunches(const ws_cuda_launch* launches, size_t count) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < count; ++i) {
    AppendRecordLocked(launches_, WS_CUDA_MSG_LAUNCHES, true, &launches[i], sizeof(launches[i]));
  }
}

void WireOutbox::AddWaits(const ws_cuda_wait* waits, size_t count) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < count; ++i) {
    AppendRecordLocked(waits_, WS_CUDA_MSG_WAITS, true, &waits[i], sizeof(waits[i]));
  }
}

bool WireOutbox::AddPcSample(const ws_cuda_pc_sample& sample, const char* function_name, const char* stall_name) {
  std::lock_guard<std::mutex> lock(mu_);
  ws_cuda_pc_sample record = sample;
  record.function_name_id = NameIdLocked(function_name);
  record.stall_name_id = NameIdLocked(stall_name);
  if (record.function_name_id == 0 || record.stall_name_id == 0) return false;
  AppendRecordLocked(pc_samples_, WS_CUDA_MSG_PC_SAMPLES, true, &record, sizeof(record));
  return true;
}

bool WireOutbox::AddCubinChunk(const ws_cuda_cubin_chunk& chunk, const uint8_t* bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  WireMessage message;
  const size_t length = kHeaderSize + sizeof(chunk) + chunk.length;
  if (length > WS_CUDA_WIRE_MAX_MESSAGE) return false;
  message.bytes.resize(length);
  WriteWireHeader(message.bytes.data(), WS_CUDA_MSG_CUBIN, static_cast<uint32_t>(length), 1);
  std::memcpy(message.bytes.data() + kHeaderSize, &chunk, sizeof(chunk));
  if (chunk.length > 0) std::memcpy(message.bytes.data() + kHeaderSize + sizeof(chunk), bytes, chunk.length);
  message.records = 1;
  message.droppable = true;
  const uint64_t dropped = counters_.messages_dropped;
  PushLocked(std::move(message));
  return counters_.messages_dropped == dropped;
}

void WireOutbox::AddControl(ws_cuda_msg_type type, const void* record, size_t size) {
  std::lock_guard<std::mutex> lock(mu_);
  WireMessage message;
  message.bytes.resize(kHeaderSize + size);
  WriteWireHeader(message.bytes.data(), type, static_cast<uint32_t>(kHeaderSize + size), 1);
  std::memcpy(message.bytes.data() + kHeaderSize, record, size);
  message.records = 1;
  PushLocked(std::move(message));
}

void WireOutbox::CloseBatches() {
  std::lock_guard<std::mutex> lock(mu_);
  SealLocked(names_);
  SealLocked(kernels_);
  SealLocked(memops_);
  SealLocked(launches_);
  SealLocked(waits_);
  SealLocked(pc_samples_);
}

WireOutbox::SendResult WireOutbox::SendSome(int fd, size_t* sent_messages) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t dummy = 0;
  size_t& sent_count = sent_messages != nullptr ? *sent_messages : dummy;
  sent_count = 0;
  if (queue_.empty()) return SendResult::kIdle;
  while (!queue_.empty()) {
    const WireMessage& message = queue_.front();
    const ssize_t sent = send(fd, message.bytes.data(), message.bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (sent < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) return SendResult::kBlocked;
      return SendResult::kBroken;
    }
    // SOCK_SEQPACKET: a datagram goes whole or not at all.
    if (message.droppable) queued_data_bytes_ -= message.bytes.size();
    queue_.pop_front();
    sent_count++;
  }
  return SendResult::kDrained;
}

std::vector<WireMessage> WireOutbox::TakeAllForTest() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<WireMessage> out(std::make_move_iterator(queue_.begin()), std::make_move_iterator(queue_.end()));
  queue_.clear();
  queued_data_bytes_ = 0;
  return out;
}

WireOutboxCounters WireOutbox::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_;
}

size_t WireOutbox::queued_data_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queued_data_bytes_;
}

size_t WireOutbox::queued_messages() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size();
}

}  // namespace warpscope::cuda
