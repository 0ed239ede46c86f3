#include "base/status.h"

#include <cerrno>
#include <cstring>

namespace warpscope {

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidArgument: return "INVALID_ARGUMENT";
    case StatusCode::kNotFound: return "NOT_FOUND";
    case StatusCode::kPermissionDenied: return "PERMISSION_DENIED";
    case StatusCode::kUnavailable: return "UNAVAILABLE";
    case StatusCode::kFailedPrecondition: return "FAILED_PRECONDITION";
    case StatusCode::kResourceExhausted: return "RESOURCE_EXHAUSTED";
    case StatusCode::kDataLoss: return "DATA_LOSS";
    case StatusCode::kInternal: return "INTERNAL";
    case StatusCode::kDeadlineExceeded: return "DEADLINE_EXCEEDED";
    case StatusCode::kCancelled: return "CANCELLED";
  }
  return "UNKNOWN";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(StatusCodeName(code_)) + ": " + message_;
}

Status Status::WithContext(const std::string& context) const {
  if (ok()) return *this;
  return Status(code_, context + ": " + message_);
}

Status ErrnoError(int err, const std::string& what) {
  StatusCode code = StatusCode::kInternal;
  switch (err) {
    case ENOENT:
    case ESRCH: code = StatusCode::kNotFound; break;
    case EACCES:
    case EPERM: code = StatusCode::kPermissionDenied; break;
    case EINVAL: code = StatusCode::kInvalidArgument; break;
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
    case ENOMEM:
    case EMFILE:
    case ENFILE: code = StatusCode::kResourceExhausted; break;
    case EAGAIN:
    case EBUSY: code = StatusCode::kUnavailable; break;
    default: break;
  }
  return Status(code, what + ": " + std::strerror(err));
}

}  // namespace warpscope
