/* libFuzzer harness for the device side: the frame decoder, the protocol core and the EEMBC DUT,
 * fed arbitrary bytes as if they came over the link. Built by tests/test_fuzz.py:
 *
 *   clang -fsanitize=fuzzer,address,undefined -Ifirmware/core -Ifirmware/eembc \
 *         (the .c files of firmware/core and firmware/eembc) firmware/fuzz/fuzz_device.c
 *
 * Mode bit 8 turns the input into well-formed frames first (type, sequence, payload length and
 * payload taken from the input, CRC computed), so the fuzzer reaches every request handler rather
 * than stopping at the CRC check. Mode bit 16 (with bit 4, the EEMBC DUT) makes the model an int8
 * autoencoder the DUT scores as ad01's reference does (EE_COMPUTE_RECONSTRUCTION_MSE); without bit 4 it makes the
 * input tensor float32, so LOAD_INPUT's widening encodings (hp_input_forms.c) are announced and decoded.
 * Besides memory errors (AddressSanitizer) it checks that everything the core sends back is a
 * well-formed frame: a response to a request type, an ERROR, or a BOOT notice.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ee_dut.h"
#include "hp_device.h"
#include "hp_trace.h"

#define INPUT_BYTES 64u
#define OUTPUT_BYTES 8u

typedef struct {
  const uint8_t *data;
  size_t len;
  size_t pos;
  uint64_t clock;
  hp_decoder out; /* decodes what the device wrote */
  uint8_t out_buf[4096];
  int checking;
} fuzz_link;

static uint8_t input[INPUT_BYTES], output[INPUT_BYTES]; /* OUTPUT_BYTES written; all read by an autoencoder */
static int invoke_pending;
static uint32_t invokes; /* per input: `infer 4000000000 0` would otherwise run for hours */

static int32_t link_read(void *ctx, uint8_t *buf, uint32_t cap, uint32_t timeout_ms) {
  fuzz_link *link = ctx;
  link->clock += (uint64_t)timeout_ms * 1000u + 1u;
  if (link->pos >= link->len) return -1; /* the link is gone: the poll loop ends */
  /* The first byte of each read chooses how much arrives, so frames split at every boundary. */
  size_t n = link->data[link->pos++] % 64u + 1u;
  if (n > cap) n = cap;
  if (n > link->len - link->pos) n = link->len - link->pos;
  memcpy(buf, link->data + link->pos, n);
  link->pos += n;
  return (int32_t)n;
}

static int32_t link_write(void *ctx, const uint8_t *buf, uint32_t len) {
  fuzz_link *link = ctx;
  uint32_t used = 0;
  while (link->checking && used < len) {
    uint32_t consumed = 0;
    hp_frame frame;
    hp_decode_status status = hp_decoder_feed(&link->out, buf + used, len - used, &consumed, &frame);
    used += consumed;
    if (status == HP_DECODE_BAD_CRC || status == HP_DECODE_TOO_LONG) __builtin_trap();
    if (status == HP_DECODE_FRAME && !(frame.type & HP_RESPONSE_BIT) && frame.type != HP_MSG_ERROR &&
        frame.type != HP_MSG_BOOT)
      __builtin_trap(); /* the device only answers */
  }
  if (link->checking && link->out.skipped) __builtin_trap(); /* no stray bytes between frames */
  return (int32_t)len;
}

static uint64_t link_ticks(void *ctx) { return ((fuzz_link *)ctx)->clock++; }

static uint32_t link_set_baud(void *ctx, uint32_t baud) {
  (void)ctx;
  return baud == 115200u ? 9600u : 115200u;
}

static int autoencoder; /* mode bits 16 and 4: int8 out, one value per input value */
static int float_input; /* mode bit 16 without 4: a float32 input tensor, which LOAD_INPUT may widen into */

static int32_t setup(void *ctx, hp_model_info *info) {
  (void)ctx;
  memset(info, 0, sizeof *info);
  info->input = float_input ? (hp_tensor_info){1, 2, {1, INPUT_BYTES / 4u}, 0.0f, 0, INPUT_BYTES}
                            : (hp_tensor_info){9, 2, {1, INPUT_BYTES}, 0.5f, -3, INPUT_BYTES};
  info->output = autoencoder ? (hp_tensor_info){9, 2, {1, INPUT_BYTES}, 0.25f, 7, INPUT_BYTES}
                             : (hp_tensor_info){3, 2, {1, OUTPUT_BYTES}, 0.25f, 7, OUTPUT_BYTES};
  return 0;
}

static uint8_t *runner_input(void *ctx) {
  (void)ctx;
  return input;
}

static const uint8_t *runner_output(void *ctx) {
  (void)ctx;
  return output;
}

static int32_t invoke(void *ctx) {
  (void)ctx;
  if (++invokes > 1000u) return 2;
  uint8_t sum = 0;
  for (uint32_t i = 0; i < INPUT_BYTES; ++i) sum = (uint8_t)(sum + input[i]);
  for (uint32_t i = 0; i < OUTPUT_BYTES; ++i) output[i] = (uint8_t)(sum + i);
  return sum == 0xFF; /* sometimes fails, so the error paths run too */
}

/* Three operators for LAYER_TRACE and LAYER_DUMP: int8, float32 and an empty output, from the input. */
static int32_t invoke_traced(void *ctx, struct hp_trace_sink *sink) {
  int32_t status = invoke(ctx);
  if (status) return status;
  float scores[4];
  for (uint32_t i = 0; i < 4; ++i) scores[i] = (float)(int8_t)input[i] * 0.5f;
  hp_trace_output outs[3] = {
      {input, INPUT_BYTES, 9, 0}, {(const uint8_t *)scores, sizeof scores, 1, 1}, {input, 0, 3, 2}};
  hp_trace_operator(sink, "CONV_2D", outs, 1);
  hp_trace_operator(sink, "FULLY_CONNECTED", outs + 1, 2);
  hp_trace_operator(sink, NULL, outs, 0);
  return 0;
}

static int32_t invoke_start(void *ctx) {
  invoke_pending = 3; /* done after three polls */
  return invoke(ctx) ? 1 : 0;
}

static int32_t invoke_poll(void *ctx, uint32_t wait_ms, int32_t *status) {
  (void)ctx;
  (void)wait_ms;
  if (invoke_pending > 0 && --invoke_pending > 0) return 0;
  *status = 0;
  return 1;
}

/* Records of (split byte, type, seq, length, payload) become (split byte, valid frame). */
static size_t make_frames(const uint8_t *in, size_t len, uint8_t *out, size_t cap) {
  size_t used = 0, i = 0;
  while (i + 4 <= len) {
    uint8_t split = in[i], type = in[i + 1];
    uint16_t seq = (uint16_t)in[i + 2];
    uint16_t n = in[i + 3];
    i += 4;
    if (n > len - i) n = (uint16_t)(len - i);
    if (used + 1 + HP_FRAME_OVERHEAD + n > cap) break;
    uint8_t payload[256];
    memcpy(payload, in + i, n);
    if (type == HP_MSG_PERF && n >= 4) payload[1] = payload[2] = payload[3] = 0; /* < 256 iterations */
    out[used++] = split;
    used += hp_frame_encode(out + used, (uint32_t)(cap - used), type, seq, payload, n);
    i += n;
  }
  return used;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  uint8_t mode = data[0];
  autoencoder = (mode & 4) && (mode & 16); /* set every run: no state carried from the one before */
  float_input = !(mode & 4) && (mode & 16);
  static uint8_t framed[1 << 16];
  invokes = 0;
  fuzz_link link = {data + 1, size - 1, 0, 0, {0}, {0}, 0};
  if (mode & 8) {
    link.data = framed;
    link.len = make_frames(data + 1, size - 1, framed, sizeof framed);
  }
  hp_decoder_init(&link.out, link.out_buf, sizeof link.out_buf);
  hp_hal hal = {&link, link_read, link_write, link_ticks, 1000u, HP_TICKS_WALL_CLOCK, 0, 4096u,
                (mode & 2) ? link_set_baud : NULL, 0, 0};
  hp_runner runner = {NULL, setup, runner_input, invoke, runner_output, NULL, NULL, NULL, invoke_traced};
  if (mode & 1) {
    runner.invoke_start = invoke_start;
    runner.invoke_poll = invoke_poll;
  }
  if (mode & 4) { /* the EEMBC DUT */
    static uint8_t buffer[4 * INPUT_BYTES]; /* float32 features for the autoencoder */
    ee_dut dut;
    ee_computation computation = autoencoder ? EE_COMPUTE_RECONSTRUCTION_MSE : EE_COMPUTE_MODEL;
    ee_dut_config cfg = {&hal, &runner, "fuzz", "vww01", buffer, sizeof buffer, computation};
    if (ee_dut_init(&dut, &cfg) != 0) __builtin_trap();
    while (ee_dut_poll(&dut, 1) >= 0) {
    }
    return 0;
  }
  /* Small buffers, so FRAME_TOO_LONG and output reads in pieces happen. */
  static uint8_t rx[96], tx[HP_MIN_TX_FRAME];
  hp_device dev;
  hp_device_config cfg = {&hal, &runner, "fuzz-board", "fuzz-build", rx, sizeof rx, tx, sizeof tx};
  if (hp_device_init(&dev, &cfg) != 0) __builtin_trap();
  link.checking = 1;
  hp_device_announce(&dev);
  while (hp_device_poll(&dev, 1) >= 0) {
  }
  return 0;
}
