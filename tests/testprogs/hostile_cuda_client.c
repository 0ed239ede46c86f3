/* A local user's attack on the root agent's probe attaching (probe_hostile_bpf_test):
 *   hostile_cuda_client SOCKET SECONDS FIFO_DIR FILE...
 * Run as an unprivileged user inside `unshare -Urm` (its own user and mount
 * namespaces). It maps each FILE executable (a copy of a library the agent
 * probes: libwarpscope_cuda.so, libtorch_python.so), bind-mounts a FIFO made
 * in FIFO_DIR over each FILE's path in its own mount namespace, connects to
 * the agent's CUDA socket with a HELLO, and holds the connection SECONDS.
 * An agent that opens the library by its path from /proc/PID/maps (through
 * /proc/PID/root) meets the FIFO, and open() blocks until a writer comes:
 * for ever. Prints "connected" once the HELLO is sent. Exit codes name the
 * step that failed. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "proto/cuda/cuda_wire.h"

int main(int argc, char** argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s SOCKET SECONDS FIFO_DIR FILE...\n", argv[0]);
    return 2;
  }
  for (int i = 4; i < argc; ++i) {
    const int fd = open(argv[i], O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 10;
    struct stat st;
    if (fstat(fd, &st) != 0) return 11;
    /* PROT_EXEC and file-backed: the agent finds it in /proc/PID/maps. */
    if (mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0) == MAP_FAILED) return 12;
    close(fd);
    char fifo[4096];
    snprintf(fifo, sizeof(fifo), "%s/fifo%d", argv[3], i);
    if (mkfifo(fifo, 0666) != 0) return 13;
    if (mount(fifo, argv[i], NULL, MS_BIND, NULL) != 0) {
      perror("mount --bind");
      return 14;
    }
  }
  const int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  struct sockaddr_un addr;
  memset(&addr, 0, sizeof(addr));
  addr.sun_family = AF_UNIX;
  strncpy(addr.sun_path, argv[1], sizeof(addr.sun_path) - 1);
  if (connect(s, (struct sockaddr*)&addr, sizeof(addr)) != 0) {
    perror("connect");
    return 15;
  }
  struct {
    struct ws_cuda_msg_header header;
    struct ws_cuda_hello hello;
  } msg;
  memset(&msg, 0, sizeof(msg));
  msg.header.magic = WS_CUDA_WIRE_MAGIC;
  msg.header.version = WS_CUDA_WIRE_VERSION;
  msg.header.type = WS_CUDA_MSG_HELLO;
  msg.header.length = sizeof(msg);
  msg.header.count = 1;
  msg.hello.pid = (uint32_t)getpid();
  msg.hello.connection_seq = 1;
  msg.hello.max_message_bytes = WS_CUDA_WIRE_MAX_MESSAGE;
  if (send(s, &msg, sizeof(msg), MSG_NOSIGNAL) != (ssize_t)sizeof(msg)) return 16;
  printf("connected\n");
  fflush(stdout);
  sleep((unsigned)atoi(argv[2]));
  return 0;
}
