#include "hp_device.h"

#include <string.h>

#include "hp_bytes.h"
#include "hp_crc32.h"
#include "hp_input_forms.h"
#include "hp_respond.h"
#include "hp_stream.h"

/* A partial frame idle for 50 ms is dropped, so a lost byte cannot wedge the decoder for long (a host
 * writes each frame in one go; USB adapters hold bytes back for at most about 16 ms). */
#define HP_IDLE_RESET_DIVIDER 20u
#define HP_READ_CHUNK 256u

uint8_t *hp_response_payload(hp_device *dev) { return dev->cfg.tx_buf + HP_HEADER_BYTES; }

uint32_t hp_response_room(const hp_device *dev) {
  uint32_t room = dev->cfg.tx_cap - HP_FRAME_OVERHEAD;
  return room > HP_MAX_PAYLOAD ? HP_MAX_PAYLOAD : room;
}

uint64_t hp_now(const hp_device *dev) {
  const hp_hal *hal = dev->cfg.hal;
  return hal->ticks ? hal->ticks(hal->ctx) : 0;
}

static void write_all(hp_device *dev, const uint8_t *buf, uint32_t len) {
  while (len > 0) {
    int32_t n = dev->cfg.hal->write(dev->cfg.hal->ctx, buf, len);
    if (n <= 0) return; /* the link is gone; the host will time out and retry */
    buf += n;
    len -= (uint32_t)n;
  }
}

void hp_send_response(hp_device *dev, uint8_t type, uint16_t seq, uint32_t payload_len) {
  dev->last_tx_len = hp_frame_seal(dev->cfg.tx_buf, type, seq, (uint16_t)payload_len);
  write_all(dev, dev->cfg.tx_buf, dev->last_tx_len);
}

void hp_input_consumed(hp_device *dev) {
  dev->input_filled = 0;
  dev->input_decoded = 0;
}

void hp_send_error(hp_device *dev, uint16_t seq, uint16_t code, const char *message) {
  uint8_t *p = hp_response_payload(dev);
  size_t len = strlen(message);
  uint32_t room = hp_response_room(dev) - 3;
  if (len > 255) len = 255;
  if (len > room) len = room;
  p = hp_put_u16(p, code);
  p = hp_put_u8(p, (uint8_t)len);
  memcpy(p, message, len);
  hp_send_response(dev, HP_MSG_ERROR, seq, 3 + (uint32_t)len);
}

/* An answer to a damaged or oversized frame, sent from its own buffer: tx_buf keeps the last
 * request's answer, so a later intact resend of that request is answered again, not run twice. */
static void send_link_error(hp_device *dev, uint16_t seq, uint16_t code, const char *message) {
  uint8_t payload[3 + 40], frame[sizeof payload + HP_FRAME_OVERHEAD];
  size_t len = strlen(message);
  if (len > sizeof payload - 3u) len = sizeof payload - 3u;
  uint8_t *p = hp_put_u16(payload, code);
  p = hp_put_u8(p, (uint8_t)len);
  memcpy(p, message, len);
  write_all(dev, frame, hp_frame_encode(frame, sizeof frame, HP_MSG_ERROR, seq, payload, (uint16_t)(3u + len)));
}

static uint8_t *put_id(uint8_t *p, const char *s) {
  size_t len = s ? strlen(s) : 0;
  if (len > HP_MAX_ID_CHARS) len = HP_MAX_ID_CHARS;
  p = hp_put_u8(p, (uint8_t)len);
  memcpy(p, s, len);
  return p + len;
}

static uint8_t *put_tensor(uint8_t *p, const hp_tensor_info *t) {
  p = hp_put_u8(p, t->dtype);
  p = hp_put_u8(p, t->rank);
  for (uint8_t i = 0; i < t->rank && i < HP_MAX_DIMS; ++i) p = hp_put_u32(p, (uint32_t)t->dims[i]);
  p = hp_put_f32(p, t->scale);
  p = hp_put_u32(p, (uint32_t)t->zero_point);
  return hp_put_u32(p, t->bytes);
}

static void handle_hello(hp_device *dev, const hp_frame *req) {
  const hp_hal *hal = dev->cfg.hal;
  uint8_t *start = hp_response_payload(dev);
  uint8_t *p = hp_put_u16(start, HP_PROTOCOL_VERSION);
  p = put_id(p, dev->cfg.board_id);
  p = put_id(p, dev->cfg.build_id);
  memcpy(p, dev->model.model_sha256_prefix, sizeof dev->model.model_sha256_prefix);
  p += sizeof dev->model.model_sha256_prefix;
  p = hp_put_u32(p, dev->model.arena_configured);
  p = hp_put_u32(p, dev->model.arena_used);
  p = hp_put_u32(p, dev->cfg.rx_cap);
  p = hp_put_u32(p, dev->cfg.tx_cap);
  p = hp_put_u32(p, hal->rx_buffer_bytes);
  p = hp_put_u32(p, hal->cpu_hz);
  p = hp_put_u32(p, hal->ticks ? hal->tick_hz : 0);
  p = hp_put_u8(p, hal->ticks ? hal->tick_kind : (uint8_t)HP_TICKS_NONE);
  p = hp_put_u32(p, (uint32_t)dev->runner_status);
  p = put_tensor(p, &dev->model.input);
  p = put_tensor(p, &dev->model.output);
  p = hp_put_u8(p, dev->cfg.runner->invoke_start ? 2u : 1u);
  p = hp_put_u32(p, hal->set_baud && hal->ticks && hal->tick_hz ? hal->max_baud : 0u);
  p = hp_put_u8(p, hal->link_flags);
  p = hp_put_u32(p, hp_input_encodings(&dev->model.input));
  p = hp_put_u32(p, HP_ROW_CODEC_ROW_MAX);
  hp_send_response(dev, HP_MSG_HELLO | HP_RESPONSE_BIT, req->seq, (uint32_t)(p - start));
}

/* Offset bit 31 set: an encoding u8 follows the offset, and the offset counts that encoding's wire bytes. */
#define HP_OFFSET_ENCODED 0x80000000u

static void handle_load_input(hp_device *dev, const hp_frame *req) {
  uint32_t offset = req->length >= 4 ? hp_get_u32(req->payload) : 0;
  uint32_t head = offset & HP_OFFSET_ENCODED ? 5u : 4u;
  if (req->length < head) {
    hp_send_error(dev, req->seq, HP_ERR_BAD_PAYLOAD, "LOAD_INPUT needs a 4-byte offset (and its encoding)");
    return;
  }
  uint8_t encoding = head == 5u ? req->payload[4] : (uint8_t)HP_INPUT_RAW;
  offset &= ~HP_OFFSET_ENCODED;
  uint32_t len = req->length - head;
  if (encoding >= 32u || !((hp_input_encodings(&dev->model.input) >> encoding) & 1u)) {
    hp_send_error(dev, req->seq, HP_ERR_UNSUPPORTED, "input encoding not announced in HELLO");
    return;
  }
  /* Chunks arrive in order; resending an earlier chunk is allowed, a gap (or a chunk of another form than
   * the input's first) is not. */
  int32_t decoded = -1;
  if (offset <= dev->input_filled && (offset == 0 || encoding == dev->input_encoding))
    decoded = hp_input_decode(encoding, &dev->model.input, dev->cfg.runner->input(dev->cfg.runner->ctx),
                              &dev->input_codec, offset, req->payload + head, len);
  if (decoded == -2) {
    hp_send_error(dev, req->seq, HP_ERR_BAD_PAYLOAD, "input stream does not decode into the input tensor");
    return;
  }
  if (decoded < 0) {
    hp_send_error(dev, req->seq, HP_ERR_BAD_OFFSET, "input chunk outside the loaded range");
    return;
  }
  dev->input_seq = req->seq;
  /* Offset 0 starts an input afresh; a resent later chunk (its answer lost while the ones after it
   * went through) keeps what follows it. */
  if (offset == 0 || offset + len > dev->input_filled) {
    dev->input_filled = offset + len;
    dev->input_decoded = (uint32_t)decoded;
    dev->input_encoding = encoding;
  }
  hp_put_u32(hp_response_payload(dev), dev->input_filled);
  hp_send_response(dev, HP_MSG_LOAD_INPUT | HP_RESPONSE_BIT, req->seq, 4);
}

static uint32_t copy_output(hp_device *dev, uint8_t *dst, uint32_t offset, uint32_t room) {
  uint32_t left = dev->model.output.bytes - offset;
  uint32_t n = left < room ? left : room;
  memcpy(dst, dev->cfg.runner->output(dev->cfg.runner->ctx) + offset, n);
  return n;
}

int hp_input_ready(hp_device *dev, const hp_frame *req) {
  if (dev->input_decoded == dev->model.input.bytes) return 1;
  hp_send_error(dev, req->seq, HP_ERR_INPUT_INCOMPLETE, "load the whole input first");
  return 0;
}

static void send_invoke_answer(hp_device *dev) {
  if (dev->invoke_done_status != 0) {
    hp_send_error(dev, dev->invoke_done_seq, HP_ERR_INVOKE_FAILED, "model invoke failed");
    return;
  }
  uint8_t *start = hp_response_payload(dev);
  uint8_t *p = hp_put_u64(start, dev->invoke_done_ticks);
  p = hp_put_u32(p, dev->model.output.bytes);
  p += copy_output(dev, p, 0, hp_response_room(dev) - (uint32_t)(p - start));
  hp_send_response(dev, HP_MSG_INVOKE | HP_RESPONSE_BIT, dev->invoke_done_seq, (uint32_t)(p - start));
}

static void finish_invoke(hp_device *dev, int32_t status) {
  dev->invoke_done_ticks = hp_now(dev) - dev->busy_t0;
  dev->busy = 0;
  dev->invoke_done_valid = 1;
  dev->invoke_done_seq = dev->busy_seq;
  dev->invoke_done_crc = dev->busy_crc;
  dev->invoke_done_status = status;
  dev->output_valid = status == 0;
  send_invoke_answer(dev);
  dev->last_type = HP_MSG_INVOKE;
  dev->last_seq = dev->busy_seq;
  dev->last_crc = dev->busy_crc;
}

/* Returns 1 once no invoke is running (answering the one that just finished). */
static int invoke_finished(hp_device *dev, uint32_t wait_ms) {
  if (!dev->busy) return 1;
  int32_t status = 0;
  if (!dev->cfg.runner->invoke_poll(dev->cfg.runner->ctx, wait_ms, &status)) return 0;
  finish_invoke(dev, status);
  return 1;
}

/* 1 when sequence number a was sent after b. A host numbers its requests one up from the last (modulo
 * 2^16) and resends a request with its own number, so within half the number space, a - b counts the
 * requests sent in between. */
static int seq_after(uint16_t a, uint16_t b) {
  uint16_t d = (uint16_t)(a - b);
  return d != 0 && d < 0x8000u;
}

static void handle_invoke(hp_device *dev, const hp_frame *req) {
  if (req->length != 0 && req->length != 4) {
    hp_send_error(dev, req->seq, HP_ERR_BAD_PAYLOAD, "INVOKE takes nothing or the input's CRC-32 u32");
    return;
  }
  if (!hp_input_ready(dev, req)) return;
  const hp_runner *runner = dev->cfg.runner;
  /* v2: the host names the input by its CRC-32, so an INVOKE that was lost while the next input
   * streamed in cannot run on the wrong sample when it is sent again. And since the host numbers its
   * requests in order, a chunk with a later number than this INVOKE belongs to a later sample (sent
   * ahead while this INVOKE went unanswered): if such a chunk wrote the input last, the input is not
   * this INVOKE's, whatever its CRC says. Both refusals ask the host to run the sample again. */
  if (req->length == 4) {
    if (dev->model.input.bytes && seq_after(dev->input_seq, req->seq)) {
      hp_send_error(dev, req->seq, HP_ERR_INPUT_MISMATCH, "input loaded after this INVOKE was sent");
      return;
    }
    if (hp_get_u32(req->payload) != hp_crc32_update(0, runner->input(runner->ctx), dev->model.input.bytes)) {
      hp_send_error(dev, req->seq, HP_ERR_INPUT_MISMATCH, "the loaded input is not the one named");
      return;
    }
  }
  /* The arena planner may reuse the input tensor's memory during Invoke: load it again. */
  hp_input_consumed(dev);
  dev->output_valid = 0;
  dev->invoke_done_valid = 0;
  dev->busy_seq = req->seq;
  dev->busy_crc = req->crc;
  dev->busy_t0 = hp_now(dev);
  if (!runner->invoke_start) {
    finish_invoke(dev, runner->invoke(runner->ctx));
    return;
  }
  int32_t status = runner->invoke_start(runner->ctx);
  if (status != 0) {
    finish_invoke(dev, status);
    return;
  }
  dev->busy = 1; /* the input slot is free again: LOAD_INPUT fills it while the model runs */
  invoke_finished(dev, 0);
}

static int is_invoke_retransmission(const hp_device *dev, const hp_frame *req) {
  return req->type == HP_MSG_INVOKE && dev->invoke_done_valid && req->seq == dev->invoke_done_seq &&
         req->crc == dev->invoke_done_crc;
}

static void handle_read_output(hp_device *dev, const hp_frame *req) {
  if (req->length != 6) {
    hp_send_error(dev, req->seq, HP_ERR_BAD_PAYLOAD, "READ_OUTPUT needs offset u32 and length u16");
    return;
  }
  if (!dev->output_valid) {
    hp_send_error(dev, req->seq, HP_ERR_NO_OUTPUT, "no output since the last input was loaded");
    return;
  }
  uint32_t offset = hp_get_u32(req->payload);
  uint32_t want = hp_get_u16(req->payload + 4);
  if (offset > dev->model.output.bytes) {
    hp_send_error(dev, req->seq, HP_ERR_BAD_OFFSET, "offset beyond the output tensor");
    return;
  }
  uint8_t *start = hp_response_payload(dev);
  uint8_t *p = hp_put_u32(start, offset);
  uint32_t room = hp_response_room(dev) - 4;
  p += copy_output(dev, p, offset, want < room ? want : room);
  hp_send_response(dev, HP_MSG_READ_OUTPUT | HP_RESPONSE_BIT, req->seq, (uint32_t)(p - start));
}

static void handle_link_test(hp_device *dev, const hp_frame *req) {
  if (req->length > hp_response_room(dev)) {
    hp_send_error(dev, req->seq, HP_ERR_BAD_PAYLOAD, "LINK_TEST payload larger than a response frame");
    return;
  }
  memcpy(hp_response_payload(dev), req->payload, req->length);
  hp_send_response(dev, HP_MSG_LINK_TEST | HP_RESPONSE_BIT, req->seq, req->length);
}

static void handle_set_baud(hp_device *dev, const hp_frame *req) {
  const hp_hal *hal = dev->cfg.hal;
  if (req->length != 4) {
    hp_send_error(dev, req->seq, HP_ERR_BAD_PAYLOAD, "SET_BAUD needs a baud rate u32");
    return;
  }
  uint32_t baud = hp_get_u32(req->payload);
  if (hal->link_flags & HP_LINK_NO_BAUD) {
    hp_send_error(dev, req->seq, HP_ERR_UNSUPPORTED, "baud does not apply to this link (USB CDC)");
    return;
  }
  /* Without a clock the device could not fall back from a rate the host cannot reach. */
  if (!hal->set_baud || !hal->ticks || !hal->tick_hz || baud == 0 || (hal->max_baud && baud > hal->max_baud)) {
    hp_send_error(dev, req->seq, HP_ERR_UNSUPPORTED, "this link cannot switch to that baud rate");
    return;
  }
  hp_put_u32(hp_response_payload(dev), baud);
  hp_send_response(dev, HP_MSG_SET_BAUD | HP_RESPONSE_BIT, req->seq, 4);
  uint32_t before = hal->set_baud(hal->ctx, baud);
  if (before == 0 || before == baud) return;
  if (!dev->baud_probation) dev->fallback_baud = before; /* a switch on probation keeps the proven rate */
  dev->baud_probation = 1;
  dev->baud_heard = 0;
  dev->baud_switched_tick = hp_now(dev);
}

/* A valid frame at the new rate proves only that the host can reach us; a frame with another sequence
 * number than the first one heard proves the host got an answer (its resends reuse the number), and
 * only that commits the rate. Without it the device goes back after HP_BAUD_PROBATION_MS. */
static void end_baud_probation(hp_device *dev, const hp_frame *frame) {
  const hp_hal *hal = dev->cfg.hal;
  if (!dev->baud_probation) return;
  if (frame) {
    if (!dev->baud_heard) {
      dev->baud_heard = 1;
      dev->baud_first_seq = frame->seq;
    } else if (frame->seq != dev->baud_first_seq) {
      dev->baud_probation = 0;
    }
  } else if (hp_now(dev) - dev->baud_switched_tick > (uint64_t)hal->tick_hz * HP_BAUD_PROBATION_MS / 1000u) {
    dev->baud_probation = 0;
    hal->set_baud(hal->ctx, dev->fallback_baud);
    hp_decoder_reset(&dev->decoder);
  }
}

static int is_retransmission(const hp_device *dev, const hp_frame *req) {
  return dev->last_tx_len != 0 && req->type == dev->last_type && req->seq == dev->last_seq &&
         req->crc == dev->last_crc;
}

static void dispatch(hp_device *dev, const hp_frame *req) {
  /* HELLO and SET_BAUD run again when resent: a stored "switched" answer would not switch. */
  if (req->type != HP_MSG_HELLO && req->type != HP_MSG_SET_BAUD && is_retransmission(dev, req)) {
    write_all(dev, dev->cfg.tx_buf, dev->last_tx_len); /* our answer was lost: repeat it */
    return;
  }
  if (is_invoke_retransmission(dev, req)) {
    send_invoke_answer(dev); /* lost after other answers went out: rebuilt, not run again */
    dev->last_type = req->type; /* tx_buf holds this answer now, not the last request's */
    dev->last_seq = req->seq;
    dev->last_crc = req->crc;
    return;
  }
  int runs_model = req->type == HP_MSG_BENCH || req->type == HP_MSG_PROFILE || req->type == HP_MSG_STREAM_START ||
                   req->type == HP_MSG_STREAM_AUDIO || req->type == HP_MSG_LAYER_TRACE ||
                   req->type == HP_MSG_LAYER_DUMP;
  if (runs_model)
    dev->invoke_done_valid = 0; /* they run the model: the output is no longer the last INVOKE's */
  if (req->type == HP_MSG_HELLO) {
    handle_hello(dev, req);
  } else if (dev->runner_status != 0 && (runs_model || req->type == HP_MSG_LOAD_INPUT ||
                                         req->type == HP_MSG_INVOKE || req->type == HP_MSG_READ_OUTPUT)) {
    hp_send_error(dev, req->seq, HP_ERR_MODEL_NOT_READY, "the model failed to load on the device");
  } else if (req->type == HP_MSG_LOAD_INPUT) {
    handle_load_input(dev, req);
  } else if (req->type == HP_MSG_INVOKE) {
    handle_invoke(dev, req);
  } else if (req->type == HP_MSG_READ_OUTPUT) {
    handle_read_output(dev, req);
  } else if (req->type == HP_MSG_LINK_TEST) {
    handle_link_test(dev, req);
  } else if (req->type == HP_MSG_PERF) {
    hp_handle_perf(dev, req);
  } else if (req->type == HP_MSG_BENCH) {
    hp_handle_bench(dev, req);
  } else if (req->type == HP_MSG_PROFILE) {
    hp_handle_profile(dev, req);
  } else if (req->type == HP_MSG_STREAM_START) {
    hp_handle_stream_start(dev, req);
  } else if (req->type == HP_MSG_STREAM_AUDIO) {
    hp_handle_stream_audio(dev, req);
  } else if (req->type == HP_MSG_SET_BAUD) {
    handle_set_baud(dev, req);
  } else if (req->type == HP_MSG_LAYER_TRACE) {
    hp_handle_layer_trace(dev, req);
  } else if (req->type == HP_MSG_LAYER_DUMP) {
    hp_handle_layer_dump(dev, req);
  } else {
    hp_send_error(dev, req->seq, HP_ERR_UNKNOWN_TYPE, "unknown message type");
  }
  dev->last_type = req->type;
  dev->last_seq = req->seq;
  dev->last_crc = req->crc;
  if (dev->busy) dev->last_tx_len = 0; /* the INVOKE is answered when it finishes */
}

int32_t hp_device_init(hp_device *dev, const hp_device_config *cfg) {
  memset(dev, 0, sizeof *dev);
  if (cfg->rx_cap < HP_MIN_RX_FRAME || cfg->tx_cap < HP_MIN_TX_FRAME) return -1;
  dev->cfg = *cfg;
  hp_decoder_init(&dev->decoder, cfg->rx_buf, cfg->rx_cap);
  dev->runner_status = cfg->runner->setup(cfg->runner->ctx, &dev->model);
  return 0;
}

static void drop_stale_partial_frame(hp_device *dev, int32_t got) {
  const hp_hal *hal = dev->cfg.hal;
  if (!hal->ticks || !hal->tick_hz) {
    if (got == 0) hp_decoder_reset(&dev->decoder);
    return;
  }
  uint64_t t = hp_now(dev);
  if (got > 0) dev->last_byte_tick = t;
  else if (dev->decoder.have && t - dev->last_byte_tick > hal->tick_hz / HP_IDLE_RESET_DIVIDER)
    hp_decoder_reset(&dev->decoder);
}

int32_t hp_device_poll(hp_device *dev, uint32_t timeout_ms) {
  uint8_t chunk[HP_READ_CHUNK];
  /* While the model runs, look often enough to answer soon after it finishes. */
  if (!invoke_finished(dev, 0) && timeout_ms > 1) timeout_ms = 1;
  int32_t got = dev->cfg.hal->read(dev->cfg.hal->ctx, chunk, sizeof chunk, timeout_ms);
  if (got < 0) return got;
  drop_stale_partial_frame(dev, got);
  end_baud_probation(dev, 0);
  uint32_t offset = 0;
  while (offset < (uint32_t)got) {
    uint32_t consumed = 0;
    hp_frame frame;
    hp_decode_status status =
        hp_decoder_feed(&dev->decoder, chunk + offset, (uint32_t)got - offset, &consumed, &frame);
    offset += consumed;
    if (status == HP_DECODE_FRAME) {
      end_baud_probation(dev, &frame);
      /* Only input for the next sample is taken while an invoke runs; anything else waits for it. */
      if (frame.type != HP_MSG_LOAD_INPUT) {
        while (!invoke_finished(dev, 10)) {
        }
      }
      dispatch(dev, &frame);
    } else if (status != HP_DECODE_NEED_MORE) {
      if (status == HP_DECODE_BAD_CRC) send_link_error(dev, frame.seq, HP_ERR_BAD_CRC, "CRC mismatch");
      else send_link_error(dev, frame.seq, HP_ERR_FRAME_TOO_LONG, "frame larger than the receive buffer");
    }
    invoke_finished(dev, 0);
  }
  return 0;
}

void hp_device_announce(hp_device *dev) {
  hp_put_u16(hp_response_payload(dev), HP_PROTOCOL_VERSION);
  hp_send_response(dev, HP_MSG_BOOT, 0, 2);
  dev->last_tx_len = 0;
}

void hp_device_run(hp_device *dev) {
  hp_device_announce(dev);
  while (hp_device_poll(dev, 100) >= 0) {
  }
}
