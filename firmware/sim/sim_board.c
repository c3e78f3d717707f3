/* The virtual board: firmware/core served on a POSIX file descriptor (a pseudo-terminal's
 * master side), with the model runner delegated to a callback. harness/device/sim_board.py
 * loads this as a shared library and plugs the TFLM host interpreter into the callback. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hp_device.h"
#include "hp_stream.h"
#include "sim_runner.h"

typedef struct {
  int fd;
  hp_hal hal;
  sim_runner *model;
  sim_runner *frontend; /* NULL: no keyword streaming */
  hp_stream stream;
  uint8_t *rx_buf;
  uint8_t *tx_buf;
  hp_device device;
} sim_board;

static int32_t posix_read(void *ctx, uint8_t *buf, uint32_t cap, uint32_t timeout_ms) {
  sim_board *board = ctx;
  struct pollfd pfd = {board->fd, POLLIN, 0};
  int ready = poll(&pfd, 1, (int)timeout_ms);
  if (ready < 0) return errno == EINTR ? 0 : -1;
  if (ready == 0) return 0;
  ssize_t n = read(board->fd, buf, cap);
  if (n > 0) return (int32_t)n;
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return 0;
  return -1; /* end of file, or EIO once no one holds the pseudo-terminal open */
}

static int32_t posix_write(void *ctx, const uint8_t *buf, uint32_t len) {
  sim_board *board = ctx;
  for (;;) {
    ssize_t n = write(board->fd, buf, len);
    if (n >= 0) return (int32_t)n;
    if (errno == EAGAIN) {
      struct pollfd pfd = {board->fd, POLLOUT, 0};
      poll(&pfd, 1, 100);
    } else if (errno != EINTR) {
      return -1;
    }
  }
}

static uint64_t posix_nanos(void *ctx) {
  (void)ctx;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void sim_board_destroy(sim_board *board) {
  if (!board) return;
  free(board->rx_buf);
  free(board->tx_buf);
  free(board);
}

/* The runners stay the caller's: it creates them first and destroys them after the board. */
sim_board *sim_board_create(int fd, const char *board_id, const char *build_id, sim_runner *model,
                            sim_runner *frontend, uint32_t rx_cap, uint32_t tx_cap, uint32_t rx_buffer_bytes) {
  sim_board *board = calloc(1, sizeof *board);
  if (!board) return NULL;
  board->fd = fd;
  board->model = model;
  board->frontend = frontend;
  board->rx_buf = malloc(rx_cap);
  board->tx_buf = malloc(tx_cap);
  if (!board->rx_buf || !board->tx_buf) {
    sim_board_destroy(board);
    return NULL;
  }
  board->hal = (hp_hal){board, posix_read, posix_write, posix_nanos, 1000000000u, HP_TICKS_WALL_CLOCK,
                        0, rx_buffer_bytes};
  hp_device_config cfg = {&board->hal, &model->runner, board_id, build_id, board->rx_buf, rx_cap,
                          board->tx_buf, tx_cap, frontend ? &frontend->runner : NULL,
                          frontend ? &board->stream : NULL};
  if (hp_device_init(&board->device, &cfg) != 0) {
    sim_board_destroy(board);
    return NULL;
  }
  return board;
}

int32_t sim_board_poll(sim_board *board, uint32_t timeout_ms) {
  return hp_device_poll(&board->device, timeout_ms);
}
