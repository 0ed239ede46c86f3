#include "agent/collectors/cpu/wait_reason.h"

#include <array>
#include <utility>

namespace warpscope {
namespace {

struct Rule {
  std::string_view prefix;  // the function's name starts with it
  std::string_view reason;
};

// Checked in order; the first prefix that matches decides.
constexpr std::array kRules = {
    Rule{"futex_", "futex"},
    Rule{"__futex_", "futex"},
    Rule{"do_futex", "futex"},
    Rule{"do_epoll_wait", "poll"},
    Rule{"ep_poll", "poll"},
    Rule{"do_sys_poll", "poll"},
    Rule{"do_poll", "poll"},
    Rule{"do_select", "poll"},
    Rule{"core_sys_select", "poll"},
    Rule{"pipe_read", "pipe"},
    Rule{"pipe_write", "pipe"},
    Rule{"wait_for_partner", "pipe"},  // opening a FIFO
    Rule{"sk_wait_data", "socket"},
    Rule{"sk_stream_wait_", "socket"},
    Rule{"__skb_wait_for_more_packets", "socket"},
    Rule{"__skb_recv_datagram", "socket"},
    Rule{"tcp_recvmsg", "socket"},
    Rule{"udp_recvmsg", "socket"},
    Rule{"unix_stream_read_generic", "socket"},
    Rule{"unix_dgram_recvmsg", "socket"},
    Rule{"inet_csk_accept", "socket"},
    Rule{"unix_accept", "socket"},
    Rule{"inet_csk_wait_for_connect", "socket"},
    Rule{"io_schedule", "disk_io"},
    Rule{"folio_wait_bit", "disk_io"},
    Rule{"__folio_lock", "disk_io"},
    Rule{"bit_wait_io", "disk_io"},
    Rule{"wait_on_page_bit", "disk_io"},
    Rule{"__wait_on_buffer", "disk_io"},
    Rule{"submit_bio_wait", "disk_io"},
    Rule{"blk_mq_get_tag", "disk_io"},
    Rule{"jbd2_log_wait_commit", "disk_io"},
    Rule{"do_nanosleep", "sleep"},
    Rule{"hrtimer_nanosleep", "sleep"},
    Rule{"common_nsleep", "sleep"},
    Rule{"msleep", "sleep"},
};

}  // namespace

std::string_view WaitReasonOfFunction(std::string_view kernel_function) {
  const std::string_view name = kernel_function.substr(0, kernel_function.find('.'));
  for (const Rule& rule : kRules) {
    if (name.substr(0, rule.prefix.size()) == rule.prefix) return rule.reason;
  }
  return {};
}

}  // namespace warpscope
