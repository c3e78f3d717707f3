/* The few newlib system calls a bare-metal build needs: a heap, and stdout/stderr to the
 * diagnostics UART (never the protocol link). */
#include <errno.h>
#include <stdint.h>
#include <sys/stat.h>

#include "board.h"

extern uint8_t _heap_start, _heap_end;
static uint8_t *heap_top = &_heap_start;

void *_sbrk(int increment) {
  if (heap_top + increment > &_heap_end) {
    errno = ENOMEM;
    return (void *)-1;
  }
  uint8_t *previous = heap_top;
  heap_top += increment;
  return previous;
}

int _write(int fd, const char *buf, int len) {
  (void)fd;
  board_debug_write(buf, (unsigned)len);
  return len;
}

int _read(int fd, char *buf, int len) {
  (void)fd;
  (void)buf;
  (void)len;
  return 0;
}

int _close(int fd) {
  (void)fd;
  return -1;
}

int _fstat(int fd, struct stat *st) {
  (void)fd;
  st->st_mode = S_IFCHR;
  return 0;
}

int _isatty(int fd) {
  (void)fd;
  return 1;
}

int _lseek(int fd, int offset, int whence) {
  (void)fd;
  (void)offset;
  (void)whence;
  return 0;
}

void _exit(int status) {
  (void)status;
  for (;;) {
  }
}

int _kill(int pid, int sig) {
  (void)pid;
  (void)sig;
  errno = EINVAL;
  return -1;
}

int _getpid(void) { return 1; }
