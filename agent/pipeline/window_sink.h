// WindowSink: where the agent loop's finished windows go: batches uploaded
// to warpscope-server with a spool (agent/export/upload_sink.h) for `run`, a
// file (agent/export/file_sink.h) for `record`.
//
// Threading: Consume runs on the sampling thread and must not block on the
// network or on a full disk; a sink that sends does so from its own thread.
#pragma once

#include "agent/pipeline/window.h"

namespace warpscope {

class WindowSink {
 public:
  virtual ~WindowSink() = default;
  // Takes one finished window (duration set). Errors are the sink's to count
  // and report: a window that cannot be delivered never stops the loop.
  virtual void Consume(Window window) = 0;
};

}  // namespace warpscope
