// symbolize_test fixture: a shared library with known exported, static and
// namespaced functions. Bodies are loops over volatile data so each function
// has a real size and is not folded into another.
extern "C" {
volatile int ws_fixture_sink;
}

namespace wsfixture {

__attribute__((noinline)) int Compute(int x) {
  for (int i = 0; i < x; ++i) ws_fixture_sink = ws_fixture_sink + i * 3;
  return ws_fixture_sink;
}

}  // namespace wsfixture

static __attribute__((noinline)) int ws_fixture_static(int x) {
  for (int i = 0; i < x; ++i) ws_fixture_sink = ws_fixture_sink ^ (i * 7);
  return ws_fixture_sink + 1;
}

extern "C" {

__attribute__((noinline)) int ws_fixture_exported(int x) {
  for (int i = 0; i < x; ++i) ws_fixture_sink = ws_fixture_sink + i;
  return ws_fixture_static(x) + wsfixture::Compute(x);
}

// The test reaches the static function through its address.
void* ws_fixture_static_address() { return reinterpret_cast<void*>(&ws_fixture_static); }

}  // extern "C"
