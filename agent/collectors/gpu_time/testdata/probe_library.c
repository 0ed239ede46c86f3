/* Stands in for libwarpscope_cuda.so in the GPU-time collector's tests: a
 * shared library that exports the launch probe the agent attaches to. */
__attribute__((visibility("default"), noinline)) void warpscope_cuda_launch_probe(unsigned long long correlation_id,
                                                                                  unsigned int launch_kind,
                                                                                  unsigned long long graph) {
  __asm__ volatile("" : : "r"(correlation_id), "r"(launch_kind), "r"(graph) : "memory");
}
