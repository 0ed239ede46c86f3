// Known answer for the .eh_frame unwinder in C++: built -O2
// -fomit-frame-pointer; virtual calls, templates, std::sort with a lambda and
// std::function, all under main(), for argv[1] seconds; argv[2] sets the
// recursion's depth (default 40: stacks of ~45 frames; 200 goes past what the
// unwinder keeps).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <vector>

namespace workload {

__attribute__((noinline)) uint64_t Burn(uint64_t x, long n) {
  for (long i = 0; i < n; i++) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    asm volatile("" : "+r"(x));
  }
  return x;
}

struct Shape {
  virtual ~Shape() = default;
  virtual uint64_t Area(uint64_t seed) const = 0;
};

struct Square : Shape {
  __attribute__((noinline)) uint64_t Area(uint64_t seed) const override { return Burn(seed, 600000) + 1; }
};

template <typename T>
__attribute__((noinline)) uint64_t Recurse(const T& shape, int depth, uint64_t seed) {
  if (depth == 0) return shape.Area(seed);
  return Recurse(shape, depth - 1, seed + 1) ^ static_cast<uint64_t>(depth);
}

__attribute__((noinline)) uint64_t SortWithLambda(uint64_t seed) {
  std::vector<uint64_t> v(512);
  for (auto& e : v) e = seed = seed * 2862933555777941757ULL + 3037000493ULL;
  std::function<bool(uint64_t, uint64_t)> less = [](uint64_t a, uint64_t b) { return Burn(a, 50) < Burn(b, 50); };
  std::sort(v.begin(), v.end(), less);
  return v[0];
}

}  // namespace workload

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 5.0;
  const int depth = argc > 2 ? std::atoi(argv[2]) : 40;
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  std::unique_ptr<workload::Shape> shape = std::make_unique<workload::Square>();
  uint64_t x = 1;
  while (std::chrono::steady_clock::now() < end) {
    x += workload::Recurse(*shape, depth, x);
    x += workload::SortWithLambda(x);
  }
  return static_cast<int>(x & 1) * 0;
}
