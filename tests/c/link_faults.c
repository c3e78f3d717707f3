/* Regression checks of the device core on a scripted link, built with AddressSanitizer and UBSan by
 * tests/unit/link/test_core_link_faults.py: a BENCH whose run count would wrap the size check, a PROFILE answer
 * that fills its frame exactly, a damaged resend between a lost answer and an intact resend, and the
 * SET_BAUD probation (committed only by a new sequence number; a resent SET_BAUD switches again), and an
 * INVOKE refused once a chunk sent after it has written the input (one-slot pipelining), and layer traces and
 * dumps kept inside their frame, paged from the operator asked, answered again from the store when resent.
 * Prints one line per check and exits non-zero on the first failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hp_bytes.h"
#include "hp_crc32.h"
#include "hp_device.h"
#include "hp_stream.h"
#include "hp_trace.h"

static struct {
  uint8_t in[1 << 14];
  size_t in_len, in_pos;
  uint64_t clock;
  hp_decoder out;
  uint8_t out_buf[1 << 14];
  hp_frame last;
  uint8_t last_payload[1 << 14];
  int damaged_answers;
  uint32_t baud;
} link;

static int32_t link_read(void *ctx, uint8_t *buf, uint32_t cap, uint32_t timeout_ms) {
  (void)ctx;
  if (link.in_pos >= link.in_len) {
    link.clock += (uint64_t)timeout_ms * 1000u + 1u;
    return 0;
  }
  size_t n = link.in_len - link.in_pos < cap ? link.in_len - link.in_pos : cap;
  memcpy(buf, link.in + link.in_pos, n);
  link.in_pos += n;
  return (int32_t)n;
}

static int32_t link_write(void *ctx, const uint8_t *buf, uint32_t len) {
  (void)ctx;
  for (uint32_t used = 0; used < len;) {
    uint32_t consumed = 0;
    hp_frame frame;
    hp_decode_status status = hp_decoder_feed(&link.out, buf + used, len - used, &consumed, &frame);
    used += consumed;
    if (status == HP_DECODE_FRAME) {
      link.last = frame;
      memcpy(link.last_payload, frame.payload, frame.length);
    } else if (status != HP_DECODE_NEED_MORE) {
      link.damaged_answers++;
    }
  }
  return (int32_t)len;
}

static uint64_t link_ticks(void *ctx) {
  (void)ctx;
  return link.clock++;
}

static uint32_t link_set_baud(void *ctx, uint32_t baud) {
  (void)ctx;
  uint32_t before = link.baud;
  link.baud = baud;
  return before;
}

static void send(uint8_t type, uint16_t seq, const uint8_t *payload, uint16_t n, int damage) {
  link.in_len += hp_frame_encode(link.in + link.in_len, sizeof link.in - link.in_len, type, seq, payload, n);
  if (damage) link.in[link.in_len - 1] ^= 0x40; /* the CRC */
}

static void run(hp_device *dev) {
  while (link.in_pos < link.in_len) hp_device_poll(dev, 1);
}

static void reset_link(void) {
  memset(&link, 0, sizeof link);
  hp_decoder_init(&link.out, link.out_buf, sizeof link.out_buf);
  link.baud = 115200;
}

static int check(int ok, const char *what) {
  printf("%s %s\n", ok ? "PASS" : "FAIL", what);
  return ok ? 0 : 1;
}

static uint8_t model_in[16], model_out[4], frontend_in[8], frontend_out[1];
static unsigned invokes;

static int32_t model_setup(void *c, hp_model_info *info) {
  (void)c;
  memset(info, 0, sizeof *info);
  info->input = (hp_tensor_info){9, 1, {16}, 1.0f, 0, 16};
  info->output = (hp_tensor_info){9, 1, {4}, 1.0f, 0, 4};
  return 0;
}
static int32_t frontend_setup(void *c, hp_model_info *info) {
  (void)c;
  memset(info, 0, sizeof *info);
  info->input = (hp_tensor_info){7, 1, {4}, 0.0f, 0, 8};
  info->output = (hp_tensor_info){9, 1, {1}, 1.0f, 0, 1};
  return 0;
}
static uint8_t *model_input(void *c) { (void)c; return model_in; }
static const uint8_t *model_output(void *c) { (void)c; return model_out; }
static uint8_t *frontend_input(void *c) { (void)c; return frontend_in; }
static const uint8_t *frontend_output(void *c) { (void)c; return frontend_out; }
static int32_t count_invoke(void *c) { (void)c; return ++invokes > 1000; }
/* Sixteen ADD operators: 10 + 16 x 12 bytes; the answer must stop before the frame ends. */
static int32_t sixteen_adds(void *c, const hp_hal *h, hp_op_timing *ops, uint32_t cap, uint32_t *count) {
  (void)c;
  (void)h;
  for (uint32_t i = 0; i < 16 && i < cap; ++i) ops[i] = (hp_op_timing){"ADD", 100u + i};
  *count = 16;
  return 0;
}

static hp_hal hal = {0, link_read, link_write, link_ticks, 1000000, HP_TICKS_WALL_CLOCK, 0, 64, 0, 0, 0};

static int bench_with_wrapping_runs(void) {
  reset_link();
  hp_runner runner = {0, model_setup, model_input, count_invoke, model_output, 0, 0, 0};
  uint8_t *rx = malloc(64), *tx = malloc(HP_MIN_TX_FRAME);
  hp_device_config cfg = {&hal, &runner, "b", "x", rx, 64, tx, HP_MIN_TX_FRAME, 0, 0};
  hp_device dev;
  if (hp_device_init(&dev, &cfg)) return 1;
  uint8_t load[20] = {0}, bench[8];
  send(HP_MSG_LOAD_INPUT, 1, load, sizeof load, 0);
  hp_put_u32(bench, 0);
  hp_put_u32(bench + 4, 0x20000001u); /* 8 x runs wraps to 8 */
  send(HP_MSG_BENCH, 2, bench, sizeof bench, 0);
  run(&dev);
  int failed = check(link.last.type == HP_MSG_ERROR && hp_get_u16(link.last_payload) == HP_ERR_BAD_PAYLOAD &&
                         invokes == 0,
                     "BENCH with 2^29+1 runs is refused before any invoke");
  free(rx);
  free(tx);
  return failed;
}

static int profile_filling_its_frame(void) {
  reset_link();
  hp_runner runner = {0, model_setup, model_input, count_invoke, model_output, sixteen_adds, 0, 0};
  uint8_t *rx = malloc(64), *tx = malloc(HP_MIN_TX_FRAME);
  hp_device_config cfg = {&hal, &runner, "b", "x", rx, 64, tx, HP_MIN_TX_FRAME, 0, 0};
  hp_device dev;
  if (hp_device_init(&dev, &cfg)) return 1;
  uint8_t load[20] = {0};
  send(HP_MSG_LOAD_INPUT, 1, load, sizeof load, 0);
  send(HP_MSG_PROFILE, 2, 0, 0, 0);
  run(&dev);
  uint32_t length = link.last.length;
  uint16_t listed = hp_get_u16(link.last_payload + 8);
  int failed = check(link.last.type == (HP_MSG_PROFILE | HP_RESPONSE_BIT) && link.damaged_answers == 0 &&
                         length + HP_FRAME_OVERHEAD <= HP_MIN_TX_FRAME && listed < 16 &&
                         hp_get_u32(link.last_payload + length - 4) == 16,
                     "PROFILE lists the operators that fit and the full count, inside its frame");
  free(rx);
  free(tx);
  return failed;
}

static int damaged_resend_between(void) {
  reset_link();
  static hp_stream stream;
  hp_runner model = {0, model_setup, model_input, count_invoke, model_output, 0, 0, 0};
  hp_runner frontend = {0, frontend_setup, frontend_input, count_invoke, frontend_output, 0, 0, 0};
  static uint8_t rx[256], tx[HP_MIN_TX_FRAME];
  hp_device_config cfg = {&hal, &model, "b", "x", rx, sizeof rx, tx, sizeof tx, &frontend, &stream};
  hp_device dev;
  if (hp_device_init(&dev, &cfg)) return 1;
  /* rate, window 4, stride 4, 16 rows of 1 byte, model every row, 4 classes, 8 ms, 1, 0, mask, 255 */
  uint32_t settings[12] = {1000, 4, 4, 16, 1, 1, 4, 8, 1, 0, 2, 255};
  uint8_t config[48], audio[16] = {0}; /* 8 samples: 2 rows */
  for (int i = 0; i < 12; ++i) hp_put_u32(config + 4 * i, settings[i]);
  send(HP_MSG_STREAM_START, 10, config, sizeof config, 0);
  send(HP_MSG_STREAM_AUDIO, 11, audio, sizeof audio, 0); /* its answer is lost on the way */
  run(&dev);
  uint32_t rows_first = hp_get_u32(link.last_payload);
  send(HP_MSG_STREAM_AUDIO, 11, audio, sizeof audio, 1); /* the resend arrives damaged */
  run(&dev);
  int refused = link.last.type == HP_MSG_ERROR && hp_get_u16(link.last_payload) == HP_ERR_BAD_CRC;
  send(HP_MSG_STREAM_AUDIO, 11, audio, sizeof audio, 0); /* and the next one intact */
  run(&dev);
  return check(rows_first == 2 && refused && link.last.type == (HP_MSG_STREAM_AUDIO | HP_RESPONSE_BIT) &&
                   hp_get_u32(link.last_payload) == 2,
               "an intact resend after a damaged one is answered from the cache, not fed twice");
}

/* Silence on the link for `ms` milliseconds. */
static void idle(hp_device *dev, unsigned ms) {
  for (unsigned t = 0; t < ms; t += 100) hp_device_poll(dev, 100);
}

static hp_hal baud_hal = {0, link_read, link_write, link_ticks, 1000000, HP_TICKS_WALL_CLOCK, 0, 64, link_set_baud, 0, 0};

static int baud_device(hp_device *dev, hp_runner *runner, uint8_t *rx, uint8_t *tx) {
  reset_link();
  hp_device_config cfg = {&baud_hal, runner, "b", "x", rx, 256, tx, HP_MIN_TX_FRAME, 0, 0};
  return hp_device_init(dev, &cfg);
}

/* The HELLO at the new rate reaches the device (twice: the host resends it) but its answers are lost,
 * so the host goes back to the old rate: the device must go back too, not commit on that HELLO. */
static int baud_commits_only_on_a_new_seq(void) {
  static uint8_t rx[256], tx[HP_MIN_TX_FRAME];
  hp_runner runner = {0, model_setup, model_input, count_invoke, model_output, 0, 0, 0};
  hp_device dev;
  if (baud_device(&dev, &runner, rx, tx)) return 1;
  uint8_t rate[4];
  hp_put_u32(rate, 921600);
  send(HP_MSG_SET_BAUD, 1, rate, 4, 0);
  run(&dev);
  int switched = link.last.type == (HP_MSG_SET_BAUD | HP_RESPONSE_BIT) && link.baud == 921600;
  send(HP_MSG_HELLO, 2, 0, 0, 0);
  run(&dev);
  send(HP_MSG_HELLO, 2, 0, 0, 0);
  run(&dev);
  idle(&dev, 1500);
  int failed = check(switched && link.baud == 115200, "the same HELLO twice at the new rate does not commit it");

  /* The host heard the HELLO: its next request has a new number, and the rate stays. */
  if (baud_device(&dev, &runner, rx, tx)) return 1;
  send(HP_MSG_SET_BAUD, 1, rate, 4, 0);
  send(HP_MSG_HELLO, 2, 0, 0, 0);
  send(HP_MSG_LINK_TEST, 3, 0, 0, 0);
  run(&dev);
  idle(&dev, 1500);
  failed |= check(link.baud == 921600 && link.last.type == (HP_MSG_LINK_TEST | HP_RESPONSE_BIT),
                  "a request with a new number at the new rate commits it");
  return failed;
}

/* SET_BAUD's answer is lost and the device falls back; the host's resend must switch again, not get
 * the stored "switched" answer while the device stays where it is. */
static int resent_set_baud_switches_again(void) {
  static uint8_t rx[256], tx[HP_MIN_TX_FRAME];
  hp_runner runner = {0, model_setup, model_input, count_invoke, model_output, 0, 0, 0};
  hp_device dev;
  if (baud_device(&dev, &runner, rx, tx)) return 1;
  uint8_t rate[4];
  hp_put_u32(rate, 921600);
  send(HP_MSG_SET_BAUD, 7, rate, 4, 0);
  run(&dev);
  idle(&dev, 1500);
  int fell_back = link.baud == 115200;
  send(HP_MSG_SET_BAUD, 7, rate, 4, 0);
  run(&dev);
  return check(fell_back && link.baud == 921600 && link.last.type == (HP_MSG_SET_BAUD | HP_RESPONSE_BIT),
               "a resent SET_BAUD switches again instead of replaying the stored answer");
}

static uint16_t last_error(void) {
  return link.last.type == HP_MSG_ERROR ? hp_get_u16(link.last_payload) : 0;
}

/* One-slot pipelining: INVOKE(k) is lost, the next sample's chunks (sent after it, higher sequence
 * numbers) arrive first and rewrite the input, then INVOKE(k) comes again. It must be refused even when
 * the next input is byte for byte the same (the CRC cannot tell), across the 16-bit wrap too; an
 * INVOKE sent after the chunks runs, and an INVOKE without a CRC (v1) is not held to the rule. */
static int invoke_refused_after_a_later_chunk(void) {
  reset_link();
  hp_runner runner = {0, model_setup, model_input, count_invoke, model_output, 0, 0, 0};
  static uint8_t rx[64], tx[HP_MIN_TX_FRAME];
  hp_device_config cfg = {&hal, &runner, "b", "x", rx, sizeof rx, tx, sizeof tx, 0, 0};
  hp_device dev;
  if (hp_device_init(&dev, &cfg)) return 1;
  uint8_t load[20] = {0}, named[4];
  for (int i = 0; i < 16; ++i) load[4 + i] = (uint8_t)(i * 3);
  hp_put_u32(named, hp_crc32_update(0, load + 4, 16));
  unsigned before = invokes;
  send(HP_MSG_LOAD_INPUT, 1, load, sizeof load, 0);
  send(HP_MSG_LOAD_INPUT, 3, load, sizeof load, 0); /* sample k+1, the same bytes, sent after INVOKE 2 */
  send(HP_MSG_INVOKE, 2, named, 4, 0);              /* INVOKE(k), resent after it was lost */
  run(&dev);
  int refused = last_error() == HP_ERR_INPUT_MISMATCH && invokes == before;
  send(HP_MSG_INVOKE, 4, named, 4, 0); /* INVOKE(k+1), sent after its chunks */
  run(&dev);
  int ran = link.last.type == (HP_MSG_INVOKE | HP_RESPONSE_BIT) && invokes == before + 1;
  send(HP_MSG_LOAD_INPUT, 0xFFFF, load, sizeof load, 0);
  send(HP_MSG_INVOKE, 0xFFFE, named, 4, 0);
  run(&dev);
  int refused_at_wrap = last_error() == HP_ERR_INPUT_MISMATCH && invokes == before + 1;
  send(HP_MSG_INVOKE, 0x0000, named, 4, 0);
  run(&dev);
  int ran_at_wrap = link.last.type == (HP_MSG_INVOKE | HP_RESPONSE_BIT) && invokes == before + 2;
  send(HP_MSG_LOAD_INPUT, 900, load, sizeof load, 0);
  send(HP_MSG_INVOKE, 100, 0, 0, 0);
  run(&dev);
  int v1_ran = link.last.type == (HP_MSG_INVOKE | HP_RESPONSE_BIT) && invokes == before + 3;
  return check(refused && ran && refused_at_wrap && ran_at_wrap && v1_ran,
               "an INVOKE is refused once a chunk sent after it wrote the input, the same bytes or not");
}

/* Twenty operators, each writing a 300-byte int8 tensor of its own index (more than a minimal frame holds). */
static int8_t op_tensor[300];
static unsigned traced_invokes;
static int32_t twenty_ops(void *c, struct hp_trace_sink *sink) {
  (void)c;
  traced_invokes++;
  for (int32_t i = 0; i < 20; ++i) {
    memset(op_tensor, (int)i, sizeof op_tensor);
    hp_trace_output out = {(const uint8_t *)op_tensor, sizeof op_tensor, 9, 100 + i};
    hp_trace_operator(sink, "DEPTHWISE_CONV_2D", &out, 1);
  }
  return 0;
}

static int layer_trace_and_dump_inside_their_frame(void) {
  reset_link();
  hp_runner runner = {0, model_setup, model_input, count_invoke, model_output, 0, 0, 0, twenty_ops};
  static uint8_t rx[64], tx[HP_MIN_TX_FRAME];
  hp_device_config cfg = {&hal, &runner, "b", "x", rx, sizeof rx, tx, sizeof tx, 0, 0};
  hp_device dev;
  if (hp_device_init(&dev, &cfg)) return 1;
  uint8_t load[20] = {0}, first[2], dump[9];
  hp_put_u16(first, 0);
  send(HP_MSG_LAYER_TRACE, 1, first, 2, 0);
  run(&dev);
  int needs_input = last_error() == HP_ERR_INPUT_INCOMPLETE && traced_invokes == 0;
  send(HP_MSG_LOAD_INPUT, 2, load, sizeof load, 0);
  hp_put_u16(first, 7);
  send(HP_MSG_LAYER_TRACE, 3, first, 2, 0);
  run(&dev);
  uint8_t records = link.last_payload[4];
  int paged = link.last.type == (HP_MSG_LAYER_TRACE | HP_RESPONSE_BIT) && hp_get_u16(link.last_payload) == 20 &&
              hp_get_u16(link.last_payload + 2) == 7 && records > 0 && records < 13 &&
              hp_get_u16(link.last_payload + 5) == 7 && link.damaged_answers == 0 &&
              link.last.length == 5u + records * (2u + 1u + 17u + 1u + HP_TRACE_OUTPUT_BYTES) &&
              link.last.length + HP_FRAME_OVERHEAD <= sizeof tx;
  send(HP_MSG_LAYER_TRACE, 3, first, 2, 0); /* its answer was lost: the same request again */
  run(&dev);
  int stored = link.last.type == (HP_MSG_LAYER_TRACE | HP_RESPONSE_BIT) && traced_invokes == 1;
  send(HP_MSG_LOAD_INPUT, 4, load, sizeof load, 0);
  hp_put_u16(dump, 19);
  dump[2] = 0;
  hp_put_u32(dump + 3, 100);
  hp_put_u16(dump + 7, 0xFFFF);
  send(HP_MSG_LAYER_DUMP, 5, dump, sizeof dump, 0);
  run(&dev);
  uint32_t got = link.last.length - 4u;
  int dumped = link.last.type == (HP_MSG_LAYER_DUMP | HP_RESPONSE_BIT) && hp_get_u32(link.last_payload) == 300 &&
               got > 0 && got <= 200 && link.last.length + HP_FRAME_OVERHEAD <= sizeof tx &&
               link.last_payload[4] == 19 && link.last_payload[3 + got] == 19;
  send(HP_MSG_LOAD_INPUT, 6, load, sizeof load, 0);
  hp_put_u32(dump + 3, 301);
  send(HP_MSG_LAYER_DUMP, 7, dump, sizeof dump, 0);
  run(&dev);
  int past_end = last_error() == HP_ERR_BAD_OFFSET;
  hp_runner plain = {0, model_setup, model_input, count_invoke, model_output, 0, 0, 0, 0};
  cfg.runner = &plain;
  if (hp_device_init(&dev, &cfg)) return 1;
  send(HP_MSG_LOAD_INPUT, 8, load, sizeof load, 0);
  send(HP_MSG_LAYER_TRACE, 9, first, 2, 0);
  run(&dev);
  int unsupported = last_error() == HP_ERR_UNSUPPORTED;
  return check(needs_input && paged && stored && dumped && past_end && unsupported,
               "LAYER_TRACE pages whole records from the operator asked and LAYER_DUMP slices, inside their frame");
}

int main(void) {
  int failed = bench_with_wrapping_runs();
  failed |= profile_filling_its_frame();
  failed |= damaged_resend_between();
  failed |= baud_commits_only_on_a_new_seq();
  failed |= resent_set_baud_switches_again();
  failed |= invoke_refused_after_a_later_chunk();
  failed |= layer_trace_and_dump_inside_their_frame();
  return failed;
}
