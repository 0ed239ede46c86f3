#include "base/status.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace warpscope {
namespace {

StatusOr<int> Half(int x) {
  if (x % 2) return InvalidArgumentError("odd");
  return x / 2;
}

Status Quarter(int x, int* out) {
  ASSIGN_OR_RETURN(int h, Half(x));
  ASSIGN_OR_RETURN(*out, Half(h));
  return Status::Ok();
}

TEST(StatusTest, PropagatesThroughMacros) {
  int out = 0;
  EXPECT_TRUE(Quarter(8, &out).ok());
  EXPECT_EQ(out, 2);
  Status s = Quarter(6, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.ToString(), "INVALID_ARGUMENT: odd");
}

TEST(StatusTest, ErrnoMapping) {
  EXPECT_EQ(ErrnoError(EPERM, "x").code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(ErrnoError(ENOENT, "x").code(), StatusCode::kNotFound);
  EXPECT_EQ(ErrnoError(ENOSPC, "x").code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(NotFoundError("a").WithContext("b").message(), "b: a");
}

}  // namespace
}  // namespace warpscope
