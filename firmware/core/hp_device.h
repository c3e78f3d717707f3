/* The device side of protocol v1: decodes requests, drives a model runner, answers.
 *
 * It knows nothing of TFLM or of any board. A board supplies an hp_hal (serial bytes and
 * clocks) and an hp_runner (the model); the same code runs on a microcontroller, under QEMU
 * and inside the virtual board. Message layouts are in docs/protocol.md.
 */
#ifndef HP_DEVICE_H
#define HP_DEVICE_H

#include <stdint.h>

#include "hp_frame.h"
#include "hp_row_codec.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HP_PROTOCOL_VERSION 2u
#define HP_MAX_DIMS 6
#define HP_MAX_ID_CHARS 32u /* board and build ids are cut to this length in HELLO */
/* The largest HELLO payload: version, two ids, sha prefix, seven u32, tick kind, status, two tensors,
 * then (v2) input slots u8, the highest baud rate the link may switch to u32, the link flags u8 and the input
 * encodings u32 (hp_input_forms.h) and the longest row the row codec decodes u32 (hp_row_codec.h). */
#define HP_HELLO_MAX_BYTES \
  (2u + 2u * (1u + HP_MAX_ID_CHARS) + 8u + 28u + 1u + 4u + 2u * (2u + 4u * HP_MAX_DIMS + 12u) + 1u + 4u + 1u + 4u + 4u)
#define HP_MIN_RX_FRAME (HP_FRAME_OVERHEAD + 16u)
#define HP_MIN_TX_FRAME (HP_FRAME_OVERHEAD + HP_HELLO_MAX_BYTES)
#define HP_MAX_PROFILED_OPS 128u

enum hp_message_type {
  HP_MSG_HELLO = 0x01,
  HP_MSG_LOAD_INPUT = 0x02,
  HP_MSG_INVOKE = 0x03,
  HP_MSG_READ_OUTPUT = 0x04,
  HP_MSG_LINK_TEST = 0x05, /* echo: the answer carries the request's payload back */
  HP_MSG_PERF = 0x06,      /* time a fixed integer workload (no model needed) */
  HP_MSG_BENCH = 0x07,     /* time repeated invokes of the loaded input */
  HP_MSG_PROFILE = 0x08,   /* one invoke timed operator by operator */
  HP_MSG_SET_BAUD = 0x09,  /* answer at the current rate, then switch (v2) */
  HP_MSG_BOOT = 0x0A,      /* device to host, unasked: the device (re)started and lost its state (v2) */
  HP_MSG_STREAM_START = 0x0B, /* keyword streaming: configure and reset the pipeline (hp_stream.h) */
  HP_MSG_STREAM_AUDIO = 0x0C, /* keyword streaming: audio samples in, detections out */
  HP_MSG_LAYER_TRACE = 0x0D,  /* one invoke traced: each operator's output digests (hp_trace.h) */
  HP_MSG_LAYER_DUMP = 0x0E,   /* one invoke traced: a slice of one operator's output tensor */
  HP_MSG_ERROR = 0x7F,
  HP_RESPONSE_BIT = 0x80 /* a response carries its request's type with this bit set */
};

enum hp_error_code {
  HP_ERR_BAD_CRC = 1,
  HP_ERR_FRAME_TOO_LONG = 2,
  HP_ERR_UNKNOWN_TYPE = 3,
  HP_ERR_BAD_PAYLOAD = 4,
  HP_ERR_BAD_OFFSET = 5,
  HP_ERR_INPUT_INCOMPLETE = 6,
  HP_ERR_INVOKE_FAILED = 7,
  HP_ERR_MODEL_NOT_READY = 8,
  HP_ERR_NO_OUTPUT = 9,
  HP_ERR_UNSUPPORTED = 10,
  HP_ERR_INPUT_MISMATCH = 11 /* INVOKE's input CRC-32 differs from the input loaded (v2) */
};

/* What one tick of hp_hal.ticks measures. */
enum hp_tick_kind {
  HP_TICKS_NONE = 0,
  HP_TICKS_CPU_CYCLES = 1, /* a cycle counter such as the Cortex-M DWT or the ESP32 CCOUNT */
  HP_TICKS_WALL_CLOCK = 2, /* a real-time clock */
  HP_TICKS_EMULATED = 3    /* an emulator's virtual time; under QEMU -icount it counts instructions */
};

/* hp_hal.link_flags, sent in HELLO (v2). */
enum hp_link_flag {
  HP_LINK_NO_BAUD = 1u /* the link has no baud rate to set (USB CDC): the host's rate is ignored */
};

/* dtype codes are TfLiteType's: 1 float32, 2 int32, 3 uint8, 7 int16, 9 int8, ... */
enum hp_dtype { HP_DTYPE_FLOAT32 = 1, HP_DTYPE_INT32 = 2, HP_DTYPE_UINT8 = 3, HP_DTYPE_INT16 = 7, HP_DTYPE_INT8 = 9 };

typedef struct {
  uint8_t dtype;
  uint8_t rank;
  int32_t dims[HP_MAX_DIMS];
  float scale;
  int32_t zero_point;
  uint32_t bytes;
} hp_tensor_info;

typedef struct {
  hp_tensor_info input;
  hp_tensor_info output;
  uint8_t model_sha256_prefix[8];
  uint32_t arena_configured;
  uint32_t arena_used;
} hp_model_info;

/* One operator's share of a profiled invoke. */
typedef struct {
  const char *tag; /* the operator's name, as the runtime reports it */
  uint64_t ticks;
} hp_op_timing;

struct hp_hal;
struct hp_stream;
struct hp_trace_sink;

typedef struct {
  void *ctx;
  /* Returns 0 once the model is ready and info is filled in, else a runner-specific code. */
  int32_t (*setup)(void *ctx, hp_model_info *info);
  uint8_t *(*input)(void *ctx);
  int32_t (*invoke)(void *ctx); /* 0 on success */
  const uint8_t *(*output)(void *ctx);
  /* One invoke with each operator timed in `hal` ticks; NULL where the runtime cannot do it.
   * Fills at most `capacity` entries and sets *count to the operators run. */
  int32_t (*invoke_profiled)(void *ctx, const struct hp_hal *hal, hp_op_timing *ops, uint32_t capacity,
                             uint32_t *count);
  /* Optional, both or neither: start an invoke and return at once, having taken what it needs from the
   * input buffer; invoke_poll waits up to wait_ms and returns 1 once the invoke finished (its result in
   * *status), else 0. With them the core loads the next input while the model runs (two input slots). */
  int32_t (*invoke_start)(void *ctx);
  int32_t (*invoke_poll)(void *ctx, uint32_t wait_ms, int32_t *status);
  /* Optional: one invoke that hands each finished operator's outputs to hp_trace_operator(sink, ...), in
   * order; NULL where the runner cannot trace (LAYER_TRACE and LAYER_DUMP are then UNSUPPORTED). */
  int32_t (*invoke_traced)(void *ctx, struct hp_trace_sink *sink);
} hp_runner;

typedef struct hp_hal {
  void *ctx;
  /* Wait up to timeout_ms for bytes; returns how many were read, or < 0 once the link is gone. */
  int32_t (*read)(void *ctx, uint8_t *buf, uint32_t cap, uint32_t timeout_ms);
  /* Returns bytes written (possibly fewer than len), or < 0 on failure. */
  int32_t (*write)(void *ctx, const uint8_t *buf, uint32_t len);
  uint64_t (*ticks)(void *ctx); /* a free-running 64-bit count; NULL where there is no clock */
  uint32_t tick_hz;             /* ticks per second */
  uint8_t tick_kind;            /* enum hp_tick_kind */
  uint32_t cpu_hz;              /* 0 when unknown */
  uint32_t rx_buffer_bytes;     /* how much the link buffers before the core reads it */
  /* Optional: switch the link to `baud` once the bytes written so far are out; returns the rate in
   * effect before, or 0 if it cannot. max_baud bounds what SET_BAUD accepts (0: no bound). */
  uint32_t (*set_baud)(void *ctx, uint32_t baud);
  uint32_t max_baud;
  uint8_t link_flags; /* enum hp_link_flag */
} hp_hal;

typedef struct {
  const hp_hal *hal;
  const hp_runner *runner;
  const char *board_id;
  const char *build_id;
  uint8_t *rx_buf; /* holds the largest request frame accepted */
  uint32_t rx_cap;
  uint8_t *tx_buf; /* holds the largest response frame sent */
  uint32_t tx_cap;
  /* Keyword streaming (optional, NULL without): the audio frontend, set up again at every stream
   * start so its state begins afresh, and the pipeline's state. */
  const hp_runner *frontend;
  struct hp_stream *stream;
} hp_device_config;

typedef struct {
  hp_device_config cfg;
  hp_decoder decoder;
  hp_model_info model;
  int32_t runner_status;
  uint32_t input_filled;  /* contiguous wire bytes of the input loaded since the last invoke */
  uint32_t input_decoded; /* the tensor bytes they decoded into */
  uint8_t input_encoding; /* the form the input being loaded crosses the wire in (hp_input_forms.h) */
  hp_row_codec input_codec; /* the row codec's state between the input's pieces */
  uint16_t input_seq;    /* sequence number of the last LOAD_INPUT that wrote into the input */
  uint8_t output_valid;
  uint64_t last_byte_tick;
  /* The last answered request, so an exact retransmission gets the same answer again. */
  uint8_t last_type;
  uint16_t last_seq;
  uint32_t last_crc;
  uint32_t last_tx_len;
  /* An invoke in progress (runners with invoke_start), and the last one finished: its answer can be
   * rebuilt for a retransmitted INVOKE until the next invoke starts. */
  uint8_t busy;
  uint16_t busy_seq;
  uint32_t busy_crc;
  uint64_t busy_t0;
  uint8_t invoke_done_valid;
  uint16_t invoke_done_seq;
  uint32_t invoke_done_crc;
  int32_t invoke_done_status;
  uint64_t invoke_done_ticks;
  /* After SET_BAUD: back to fallback_baud unless, within HP_BAUD_PROBATION_MS, a valid frame arrives
   * at the new rate whose sequence number differs from the first one heard there (baud_first_seq). */
  uint8_t baud_probation;
  uint8_t baud_heard;
  uint16_t baud_first_seq;
  uint32_t fallback_baud;
  uint64_t baud_switched_tick;
  uint8_t streaming; /* a stream was started and has not failed */
} hp_device;

#define HP_BAUD_PROBATION_MS 1000u

/* Calls runner->setup once; a failed setup is reported in HELLO and on every request.
 * Returns -1 (and leaves the device unusable) if rx_cap < HP_MIN_RX_FRAME or tx_cap < HP_MIN_TX_FRAME. */
int32_t hp_device_init(hp_device *dev, const hp_device_config *cfg);

/* Read what arrives within timeout_ms and answer every complete request.
 * Returns 0, or < 0 once the link is gone. */
int32_t hp_device_poll(hp_device *dev, uint32_t timeout_ms);

/* Tell the host the device has just started: a BOOT frame (sequence number 0, payload the protocol
 * version u16). A host in the middle of a sample then says HELLO again and resends it. */
void hp_device_announce(hp_device *dev);

/* Announce the boot, then poll until the link is gone (firmware main loops call this). */
void hp_device_run(hp_device *dev);

/* The PERF workload: CRC-32 over a fixed 256-byte pattern, `iterations` times. Its instruction
 * count is fixed for a given build, which makes it a regression check under emulation. */
uint32_t hp_perf_workload(uint32_t iterations);

#ifdef __cplusplus
}
#endif

#endif
