// CudaSocketServer: the agent's end of the libwarpscope_cuda.so socket
// (proto/cuda/cuda_wire.h). It listens on a unix SOCK_SEQPACKET socket,
// accepts any number of CUDA processes, answers each HELLO with the current
// CONFIG, validates every message, resolves kernel name ids through the
// connection's dictionary and hands decoded events to one consumer.
//
// A connection that breaks the protocol (bad message, name id never defined,
// anything before HELLO) is closed and counted; the library then reconnects
// later with a fresh dictionary. The process's pid is the peer's
// SO_PEERCRED pid (in the agent's pid namespace), not the one in HELLO.
// Connections are bounded in all and per user (SO_PEERCRED uid); one over a
// bound is closed at once and counted (the library retries later).
//
// Threading: Start() spawns one thread ("cuda-socket") that owns every
// connection and calls the consumer, in order per connection; the consumer
// must return quickly (hand work to another thread if it is slow). PostConfig
// and counters() may be called from any thread; the destructor stops and
// joins the thread, closes all connections and removes the socket file.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "agent/collectors/gpu_time/socket/cuda_record_bounds.h"
#include "agent/collectors/gpu_time/socket/cuda_wire_decoder.h"
#include "agent/collectors/gpu_time/socket/kernel_name_table.h"
#include "base/status.h"

namespace warpscope {

// A kernel record with its name resolved (shared by all records of the name).
struct CudaKernel {
  ws_cuda_kernel record{};
  // Never null: the interned name, KernelNameTable::UnknownName() for name id
  // 0, or RefusedName() when the name budget could not take it.
  std::shared_ptr<const InternedKernelName> name;
};

// A PC sampling record with its function and stall-reason names resolved.
struct CudaPcSample {
  ws_cuda_pc_sample record{};
  std::shared_ptr<const InternedKernelName> function;  // never null (as CudaKernel::name)
  std::shared_ptr<const InternedKernelName> stall_reason;
};

// A whole cubin, reassembled from its CUBIN chunks.
struct CudaCubin {
  uint64_t crc = 0;
  std::shared_ptr<const std::string> bytes;
};

struct CudaProcessEvent {
  enum class Kind {
    kConnected,     // `hello` filled
    kRecords,       // one of kernels / memops / launches / waits / pc_samples / cubin / stats / clock / window filled
    kDisconnected,  // `reason` says why
  };
  Kind kind = Kind::kRecords;
  uint64_t connection_id = 0;  // unique for the server's lifetime
  int32_t pid = 0;             // SO_PEERCRED
  uint32_t uid = 0;            // SO_PEERCRED
  ws_cuda_hello hello{};
  std::vector<CudaKernel> kernels;
  std::vector<ws_cuda_memop> memops;
  std::vector<ws_cuda_launch> launches;
  std::vector<ws_cuda_wait> waits;
  std::vector<CudaPcSample> pc_samples;
  std::optional<CudaCubin> cubin;
  std::optional<ws_cuda_stats> stats;
  std::optional<ws_cuda_clock_pair> clock;
  std::optional<ws_cuda_window> window;
  std::string reason;
};

// The resolved `dir` when it and every directory above it are safe for the
// CUDA socket: owned by root or the agent's user and writable by no one else
// (a sticky directory such as /tmp is fine above it); FailedPrecondition
// saying which is not. is_socket_directory false: `dir` is where the socket's
// directory would be created, judged as a directory above it.
StatusOr<std::string> TrustedSocketDirectory(const std::string& dir, bool is_socket_directory = true);

struct CudaSocketServerOptions {
  std::string socket_path = WS_CUDA_DEFAULT_SOCKET_PATH;
  ws_cuda_config config = DefaultCudaConfig();
  size_t max_connections = 1024;
  // Open connections of one user (SO_PEERCRED uid), so that one local user
  // cannot hold every connection and lock other users' applications out.
  // Root and the agent's own user are bound only by max_connections.
  size_t max_connections_per_uid = 64;
  // New connections one such user may open per second (a token bucket of
  // this rate and depth max_connections_per_uid): each costs the agent a
  // look at the process (/proc, its maps, the probe), so a user who
  // connects and breaks the protocol in a loop must not cost it more than
  // this. A library connects once, and retries every 2 s when refused.
  double max_connects_per_sec_per_uid = 20;
  // Every connection's kernel names and dictionary entries are charged here;
  // null: the server makes its own of kDefaultKernelNameBytes (names shown as
  // reported). A name it refuses resolves to KernelNameTable::RefusedName().
  std::shared_ptr<KernelNameTable> kernel_names;
  // Names one connection may define, text plus kDictionaryEntryBytes each
  // (the library sends at most 8 MiB): a peer past it breaks the protocol.
  size_t max_name_bytes_per_connection = 64u << 20;
  // Cubins being reassembled, all connections together; a cubin that does
  // not fit is skipped (counted) and its samples show function + offset.
  size_t max_cubin_bytes_in_flight = 256u << 20;
  // Times and durations a record must be within; one outside is dropped and
  // counted (CudaSocketServerCounters::rejected), the rest of its message kept.
  CudaRecordBounds record_bounds;
};

inline constexpr size_t kDefaultKernelNameBytes = 64u << 20;
// Charged to the name budget for each name id a connection defines.
inline constexpr size_t kDictionaryEntryBytes = 64;

struct CudaSocketServerCounters {
  uint64_t connections_accepted = 0;
  uint64_t connections_refused = 0;  // over max_connections
  uint64_t connections_refused_per_uid = 0;  // over max_connections_per_uid
  uint64_t connections_refused_rate = 0;     // over max_connects_per_sec_per_uid
  uint64_t connections_open = 0;
  uint64_t protocol_errors = 0;      // connections closed for a bad message
  // Closed because the name budget could not take even their name ids (it
  // holds only names in use); their names are refused first.
  uint64_t closed_over_name_budget = 0;
  uint64_t messages = 0;
  uint64_t bytes = 0;
  uint64_t cubins_received = 0;
  uint64_t cubins_skipped = 0;  // over max_cubin_bytes_in_flight, or chunks missing
  CudaRecordRejections rejected;  // records out of options.record_bounds, dropped
};

class CudaSocketServer {
 public:
  using Consumer = std::function<void(CudaProcessEvent&&)>;

  // Creates the socket's directory if missing (0755), refuses one that
  // another user could replace the socket in (owned by someone other than
  // root or the agent's user, or writable by group or others; or a parent
  // directory like that, sticky ones excepted), replaces a stale socket file,
  // binds a socket connectable by every user (0666: applications run as any
  // user), and starts the thread.
  static StatusOr<std::unique_ptr<CudaSocketServer>> Start(const CudaSocketServerOptions& options,
                                                           Consumer consumer);
  ~CudaSocketServer();
  CudaSocketServer(const CudaSocketServer&) = delete;
  CudaSocketServer& operator=(const CudaSocketServer&) = delete;

  // Any thread: the new config goes to every connection and to later ones.
  void PostConfig(const ws_cuda_config& config);
  CudaSocketServerCounters counters() const;
  // Any thread.
  const KernelNameTable& kernel_names() const { return *kernel_names_; }
  // The socket's path with the directory resolved (symlinks followed).
  const std::string& socket_path() const { return bound_path_; }

 private:
  struct Connection;
  CudaSocketServer(const CudaSocketServerOptions& options, std::string bound_path, Consumer consumer, int listen_fd,
                   int wake_fd);
  void RunThread();
  void AcceptAll();
  // Reads every queued message of `c`; false when the connection must close.
  bool ReadConnection(Connection& c, std::string* reason);
  Status HandleMessage(Connection& c, CudaWireMessage&& message);
  // A CUBIN chunk; the whole cubin once its last chunk is in.
  std::optional<CudaCubin> TakeCubinChunk(Connection& c, const ws_cuda_cubin_chunk& chunk,
                                          std::vector<uint8_t>& bytes);
  void Close(Connection& c, const std::string& reason, bool protocol_error);
  void SendConfigToAll();

  const CudaSocketServerOptions options_;
  const std::string bound_path_;
  const std::shared_ptr<KernelNameTable> kernel_names_;
  const Consumer consumer_;
  const int listen_fd_;
  const int wake_fd_;  // eventfd: PostConfig and shutdown
  std::atomic<bool> stop_{false};
  std::thread thread_;

  mutable std::mutex config_mu_;
  ws_cuda_config config_;  // guarded by config_mu_
  bool config_changed_ = false;

  // Owned by the server thread.
  std::vector<std::unique_ptr<Connection>> connections_;
  std::unordered_map<uint32_t, size_t> open_by_uid_;  // uid -> open connections
  struct ConnectBucket {
    double tokens = 0;
    int64_t at_ns = 0;
  };
  std::unordered_map<uint32_t, ConnectBucket> connects_by_uid_;  // bounded users' new-connection buckets
  std::unordered_set<uint32_t> uids_warned_;          // refused uids already logged (bounded)
  uint64_t next_connection_id_ = 1;
  std::vector<uint8_t> receive_buffer_;

  std::atomic<uint64_t> refused_rate_{0};
  std::atomic<uint64_t> accepted_{0}, refused_{0}, refused_per_uid_{0}, open_{0}, protocol_errors_{0},
      closed_over_name_budget_{0}, messages_{0}, bytes_{0}, cubins_received_{0}, cubins_skipped_{0};
  std::atomic<uint64_t> rejected_kernels_{0}, rejected_memops_{0}, rejected_waits_{0}, rejected_launches_{0},
      rejected_pc_samples_{0}, rejected_clock_pairs_{0}, rejected_windows_{0};
  size_t cubin_bytes_in_flight_ = 0;  // server thread
};

}  // namespace warpscope
