/* symbolize_test fixture: stripped with --strip-all, its symbols live only in
 * a separate .debug file found through .gnu_debuglink. */
volatile int ws_split_sink;

static __attribute__((noinline)) int ws_split_static(int x) {
  for (int i = 0; i < x; ++i) ws_split_sink = ws_split_sink ^ (i * 5);
  return ws_split_sink;
}

__attribute__((noinline)) int ws_split_exported(int x) {
  for (int i = 0; i < x; ++i) ws_split_sink = ws_split_sink + i;
  return ws_split_static(x);
}

void* ws_split_static_address(void) { return (void*)&ws_split_static; }
