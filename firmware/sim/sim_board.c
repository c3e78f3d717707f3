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

typedef int32_t (*sim_invoke_fn)(void *user);

typedef struct {
  int fd;
  hp_hal hal;
  hp_runner runner;
  hp_model_info info;
  int32_t runner_status;
  sim_invoke_fn invoke;
  void *user;
  uint8_t *input;
  uint8_t *output;
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

static int32_t callback_setup(void *ctx, hp_model_info *info) {
  sim_board *board = ctx;
  *info = board->info;
  return board->runner_status;
}

static uint8_t *callback_input(void *ctx) { return ((sim_board *)ctx)->input; }

static const uint8_t *callback_output(void *ctx) { return ((sim_board *)ctx)->output; }

static int32_t callback_invoke(void *ctx) {
  sim_board *board = ctx;
  return board->invoke(board->user);
}

void sim_board_destroy(sim_board *board) {
  if (!board) return;
  free(board->input);
  free(board->output);
  free(board->rx_buf);
  free(board->tx_buf);
  free(board);
}

sim_board *sim_board_create(int fd, const char *board_id, const char *build_id,
                            const hp_model_info *info, int32_t runner_status, uint32_t rx_cap,
                            uint32_t tx_cap, uint32_t rx_buffer_bytes, sim_invoke_fn invoke,
                            void *user) {
  sim_board *board = calloc(1, sizeof *board);
  if (!board) return NULL;
  board->fd = fd;
  board->info = *info;
  board->runner_status = runner_status;
  board->invoke = invoke;
  board->user = user;
  board->input = calloc(1, info->input.bytes ? info->input.bytes : 1);
  board->output = calloc(1, info->output.bytes ? info->output.bytes : 1);
  board->rx_buf = malloc(rx_cap);
  board->tx_buf = malloc(tx_cap);
  if (!board->input || !board->output || !board->rx_buf || !board->tx_buf) {
    sim_board_destroy(board);
    return NULL;
  }
  board->hal = (hp_hal){board, posix_read, posix_write, posix_nanos, 1000000000u, HP_TICKS_WALL_CLOCK,
                        0, rx_buffer_bytes};
  board->runner = (hp_runner){board, callback_setup, callback_input, callback_invoke, callback_output,
                              NULL /* the TFLM host interpreter has no per-operator timer */};
  hp_device_config cfg = {&board->hal, &board->runner, board_id, build_id,
                          board->rx_buf, rx_cap, board->tx_buf, tx_cap};
  if (hp_device_init(&board->device, &cfg) != 0) {
    sim_board_destroy(board);
    return NULL;
  }
  return board;
}

uint8_t *sim_board_input(sim_board *board) { return board->input; }

uint8_t *sim_board_output(sim_board *board) { return board->output; }

int32_t sim_board_poll(sim_board *board, uint32_t timeout_ms) {
  return hp_device_poll(&board->device, timeout_ms);
}
