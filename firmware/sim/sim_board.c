/* The virtual board: firmware/core served on a POSIX file descriptor (a pseudo-terminal's
 * master side), with the model runner delegated to a callback. harness/device/sim_board.py
 * loads this as a shared library and plugs the TFLM host interpreter into the callback.
 *
 * Link emulation (sim_board_emulate): bytes cross the descriptor no faster than a UART at `baud`
 * carries them (10 bits a byte, each direction on its own), and an invoke takes at least the
 * emulated inference time, during which the core keeps receiving, as a UART with DMA does. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ee_dut.h"
#include "hp_device.h"
#include "hp_stream.h"
#include "sim_pace.h"
#include "sim_runner.h"

typedef struct {
  int fd;
  hp_hal hal;
  hp_runner runner;
  hp_model_info info;
  int32_t runner_status;
  sim_invoke_fn invoke;
  sim_trace_fn trace;
  void *user;
  uint8_t *input;
  uint8_t *output;
  uint8_t *rx_buf;
  uint8_t *tx_buf;
  hp_device device;
  uint32_t baud;            /* the rate in effect, switched by SET_BAUD */
  uint8_t throttled;        /* pace bytes to `baud` */
  uint64_t byte_ns;         /* one byte's time on the wire, 0 when not throttled */
  uint64_t rx_free_ns;      /* when the last byte delivered to the core finished arriving */
  uint64_t tx_free_ns;      /* when the last byte written finishes leaving */
  uint64_t invoke_ns;       /* emulated inference time, 0 for the interpreter's own */
  uint64_t invoke_deadline; /* an invoke started by invoke_start is done at this time */
  int32_t invoke_status;
  ee_dut *eembc; /* set: the board speaks the MLPerf Tiny / EEMBC DUT protocol instead */
  uint8_t *eembc_buffer;
  hp_stream stream; /* keyword streaming, with a frontend runner (sim_runner.c) */
} sim_board;

static uint32_t pacing_step(const sim_board *board, uint32_t cap) { return sim_pacing_step(board->byte_ns, cap); }

static void pace(const sim_board *board, uint64_t *free_ns, uint32_t n) { sim_pace(board->byte_ns, free_ns, n); }

static int32_t posix_read(void *ctx, uint8_t *buf, uint32_t cap, uint32_t timeout_ms) {
  sim_board *board = ctx;
  struct pollfd pfd = {board->fd, POLLIN, 0};
  int ready = poll(&pfd, 1, (int)timeout_ms);
  if (ready < 0) return errno == EINTR ? 0 : -1;
  if (ready == 0) return 0;
  ssize_t n = read(board->fd, buf, pacing_step(board, cap));
  if (n > 0) {
    pace(board, &board->rx_free_ns, (uint32_t)n);
    return (int32_t)n;
  }
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return 0;
  return -1; /* end of file, or EIO once no one holds the pseudo-terminal open */
}

static int32_t posix_write(void *ctx, const uint8_t *buf, uint32_t len) {
  sim_board *board = ctx;
  len = pacing_step(board, len);
  pace(board, &board->tx_free_ns, len); /* the bytes reach the host once they would have crossed */
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
  return sim_monotonic_ns();
}

static uint32_t sim_set_baud(void *ctx, uint32_t baud) {
  sim_board *board = ctx;
  uint32_t before = board->baud;
  board->baud = baud;
  if (board->throttled) board->byte_ns = sim_byte_time_ns(baud);
  return before;
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
  uint64_t done = sim_monotonic_ns() + board->invoke_ns;
  int32_t status = board->invoke(board->user);
  sim_sleep_until(done);
  return status;
}

/* The interpreter runs at once (it copies the input); the emulated time then runs out while the
 * core goes on serving the link. */
static int32_t callback_invoke_start(void *ctx) {
  sim_board *board = ctx;
  board->invoke_deadline = sim_monotonic_ns() + board->invoke_ns;
  board->invoke_status = board->invoke(board->user);
  return 0;
}

static int32_t callback_invoke_poll(void *ctx, uint32_t wait_ms, int32_t *status) {
  sim_board *board = ctx;
  uint64_t t = sim_monotonic_ns();
  if (t < board->invoke_deadline) {
    uint64_t until = t + (uint64_t)wait_ms * SIM_NS_PER_MS;
    if (until < board->invoke_deadline) {
      if (wait_ms) sim_sleep_until(until);
      return 0;
    }
    sim_sleep_until(board->invoke_deadline);
  }
  *status = board->invoke_status;
  return 1;
}

static int32_t callback_invoke_traced(void *ctx, struct hp_trace_sink *sink) {
  sim_board *board = ctx;
  return board->trace(board->user, sink);
}

/* The runner can trace layers (LAYER_TRACE, LAYER_DUMP) through `trace`; NULL: it cannot. */
void sim_board_trace(sim_board *board, sim_trace_fn trace) {
  board->trace = trace;
  board->runner.invoke_traced = trace ? callback_invoke_traced : NULL;
}

void sim_board_destroy(sim_board *board) {
  if (!board) return;
  free(board->eembc);
  free(board->eembc_buffer);
  free(board->input);
  free(board->output);
  free(board->rx_buf);
  free(board->tx_buf);
  free(board);
}

sim_board *sim_board_create(int fd, const char *board_id, const char *build_id,
                            const hp_model_info *info, int32_t runner_status, uint32_t rx_cap,
                            uint32_t tx_cap, uint32_t rx_buffer_bytes, sim_invoke_fn invoke,
                            void *user, sim_runner *frontend) {
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
  board->baud = 115200u;
  board->hal = (hp_hal){board, posix_read, posix_write, posix_nanos, 1000000000u, HP_TICKS_WALL_CLOCK,
                        0, rx_buffer_bytes, sim_set_baud, 0, 0};
  board->runner = (hp_runner){board, callback_setup, callback_input, callback_invoke, callback_output,
                              NULL /* the TFLM host interpreter has no per-operator timer */,
                              callback_invoke_start, callback_invoke_poll, NULL /* sim_board_trace sets it */};
  hp_device_config cfg = {&board->hal, &board->runner, board_id, build_id, board->rx_buf, rx_cap,
                          board->tx_buf, tx_cap, frontend ? &frontend->runner : NULL,
                          frontend ? &board->stream : NULL};
  if (hp_device_init(&board->device, &cfg) != 0) {
    sim_board_destroy(board);
    return NULL;
  }
  return board;
}

/* baud 0 leaves the link unthrottled; max_baud bounds SET_BAUD (0: any); invoke_us 0 keeps the
 * interpreter's own time. Call before serving. */
void sim_board_emulate(sim_board *board, uint32_t baud, uint32_t max_baud, uint32_t invoke_us) {
  board->throttled = baud != 0;
  if (baud) board->baud = baud;
  board->byte_ns = board->throttled ? sim_byte_time_ns(board->baud) : 0;
  board->hal.max_baud = max_baud;
  board->invoke_ns = (uint64_t)invoke_us * 1000u;
}

/* Serve as firmware with a blocking invoke does: one input slot (no invoke_start). What arrives while
 * the model runs waits in the pseudo-terminal, as in a board's receive ring. Call before serving. */
void sim_board_one_slot(sim_board *board) {
  board->runner.invoke_start = NULL;
  board->runner.invoke_poll = NULL;
}

uint8_t *sim_board_input(sim_board *board) { return board->input; }

uint8_t *sim_board_output(sim_board *board) { return board->output; }

/* The energy-mode DUT's timestamp: a pin pulse on a board; the virtual board has no pin to pulse. */
static void sim_no_pin(void *ctx) { (void)ctx; }

/* Serve the EEMBC DUT protocol from now on, computing `computation` (an ee_computation), and print its
 * boot banner; `energy` nonzero: as an energy-mode build (m-timestamp-mode-energy, no m-lap-us- lines).
 * Returns 0, or -1. */
int32_t sim_board_use_eembc(sim_board *board, const char *name, const char *model, uint32_t buffer_bytes,
                            int32_t computation, int32_t energy) {
  board->eembc = calloc(1, sizeof *board->eembc);
  board->eembc_buffer = calloc(1, buffer_bytes ? buffer_bytes : 1); /* db print shows unloaded bytes */
  if (!board->eembc || !board->eembc_buffer) return -1;
  ee_dut_config cfg = {&board->hal, &board->runner, name, model, board->eembc_buffer, buffer_bytes,
                       (ee_computation)computation, 0, energy ? sim_no_pin : NULL};
  return ee_dut_init(board->eembc, &cfg);
}

/* A reset, as a watchdog or a brown-out gives: all protocol state lost, then the boot notice. */
int32_t sim_board_reset(sim_board *board) {
  hp_device_config cfg = board->device.cfg;
  if (hp_device_init(&board->device, &cfg) != 0) return -1;
  hp_device_announce(&board->device);
  return 0;
}

/* The rate the board's link is at now (SET_BAUD switches it), for tests that lose bytes between
 * ends at different rates as a real UART does. */
uint32_t sim_board_baud(const sim_board *board) { return board->baud; }

int32_t sim_board_poll(sim_board *board, uint32_t timeout_ms) {
  if (board->eembc) return ee_dut_poll(board->eembc, timeout_ms);
  return hp_device_poll(&board->device, timeout_ms);
}
