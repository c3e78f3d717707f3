/* Requests that run a workload or the model many times: PERF, BENCH, PROFILE and keyword streaming
 * (STREAM_START, STREAM_AUDIO). Layouts in docs/protocol.md. */
#include <string.h>

#include "hp_bytes.h"
#include "hp_crc32.h"
#include "hp_respond.h"
#include "hp_stream.h"

uint32_t hp_perf_workload(uint32_t iterations) {
  uint8_t pattern[256];
  for (uint32_t i = 0; i < sizeof pattern; ++i) pattern[i] = (uint8_t)(i * 7u + 3u);
  uint32_t crc = 0;
  for (uint32_t i = 0; i < iterations; ++i) crc = hp_crc32_update(crc, pattern, sizeof pattern);
  return crc;
}

void hp_handle_perf(hp_device *dev, const hp_frame *req) {
  if (req->length != 4) {
    hp_send_error(dev, req->seq, HP_ERR_BAD_PAYLOAD, "PERF needs an iteration count u32");
    return;
  }
  uint64_t t0 = hp_now(dev);
  uint32_t checksum = hp_perf_workload(hp_get_u32(req->payload));
  uint64_t elapsed = hp_now(dev) - t0;
  uint8_t *p = hp_put_u64(hp_response_payload(dev), elapsed);
  hp_put_u32(p, checksum);
  hp_send_response(dev, HP_MSG_PERF | HP_RESPONSE_BIT, req->seq, 12);
}

void hp_handle_bench(hp_device *dev, const hp_frame *req) {
  if (req->length != 8) {
    hp_send_error(dev, req->seq, HP_ERR_BAD_PAYLOAD, "BENCH needs warmups u32 and runs u32");
    return;
  }
  uint32_t warmups = hp_get_u32(req->payload);
  uint32_t runs = hp_get_u32(req->payload + 4);
  if (runs == 0 || runs > (hp_response_room(dev) - 4u) / 8u) { /* divided: 8 x runs could wrap into range */
    hp_send_error(dev, req->seq, HP_ERR_BAD_PAYLOAD, "BENCH runs must fit one response frame");
    return;
  }
  if (!hp_input_ready(dev, req)) return;
  const hp_runner *runner = dev->cfg.runner;
  uint8_t *p = hp_put_u32(hp_response_payload(dev), runs);
  int32_t status = 0;
  for (uint32_t i = 0; i < warmups && status == 0; ++i) status = runner->invoke(runner->ctx);
  /* Later invokes run on whatever the arena planner left in the input tensor: the same graph and
   * shapes, which is what the timing measures, not necessarily the same input values. */
  for (uint32_t i = 0; i < runs && status == 0; ++i) {
    uint64_t t0 = hp_now(dev);
    status = runner->invoke(runner->ctx);
    p = hp_put_u64(p, hp_now(dev) - t0);
  }
  hp_input_consumed(dev);
  dev->output_valid = 0;
  if (status != 0) {
    hp_send_error(dev, req->seq, HP_ERR_INVOKE_FAILED, "model invoke failed");
    return;
  }
  hp_send_response(dev, HP_MSG_BENCH | HP_RESPONSE_BIT, req->seq, 4u + 8u * runs);
}

void hp_handle_profile(hp_device *dev, const hp_frame *req) {
  const hp_runner *runner = dev->cfg.runner;
  if (!runner->invoke_profiled) {
    hp_send_error(dev, req->seq, HP_ERR_UNSUPPORTED, "this runner cannot time operators");
    return;
  }
  if (!hp_input_ready(dev, req)) return;
  static hp_op_timing ops[HP_MAX_PROFILED_OPS];
  uint32_t count = 0;
  uint64_t t0 = hp_now(dev);
  int32_t status = runner->invoke_profiled(runner->ctx, dev->cfg.hal, ops, HP_MAX_PROFILED_OPS, &count);
  uint64_t total = hp_now(dev) - t0;
  hp_input_consumed(dev);
  dev->output_valid = status == 0;
  if (status != 0) {
    hp_send_error(dev, req->seq, HP_ERR_INVOKE_FAILED, "model invoke failed");
    return;
  }
  uint8_t *start = hp_response_payload(dev);
  uint8_t *p = hp_put_u64(start, total);
  uint8_t *count_at = p;
  p = hp_put_u16(p, 0);
  uint32_t room = hp_response_room(dev), sent = 0;
  for (uint32_t i = 0; i < count && i < HP_MAX_PROFILED_OPS; ++i, ++sent) {
    size_t len = ops[i].tag ? strlen(ops[i].tag) : 0;
    if (len > 32) len = 32;
    /* Room for this entry and the operator count after the entries; the host sees fewer entries than
     * operators when they do not all fit. */
    if ((uint32_t)(p - start) + 9u + len + 4u > room) break;
    p = hp_put_u64(p, ops[i].ticks);
    p = hp_put_u8(p, (uint8_t)len);
    memcpy(p, ops[i].tag, len);
    p += len;
  }
  hp_put_u16(count_at, (uint16_t)sent);
  p = hp_put_u32(p, count);
  hp_send_response(dev, HP_MSG_PROFILE | HP_RESPONSE_BIT, req->seq, (uint32_t)(p - start));
}

void hp_handle_stream_start(hp_device *dev, const hp_frame *req) {
  const hp_runner *frontend = dev->cfg.frontend;
  dev->streaming = 0;
  if (!frontend || !dev->cfg.stream) {
    hp_send_error(dev, req->seq, HP_ERR_UNSUPPORTED, "this firmware has no audio frontend");
    return;
  }
  if (req->length != HP_STREAM_CONFIG_BYTES) {
    hp_send_error(dev, req->seq, HP_ERR_BAD_PAYLOAD, "STREAM_START needs the 48-byte configuration");
    return;
  }
  hp_model_info frontend_info;
  memset(&frontend_info, 0, sizeof frontend_info);
  if (frontend->setup(frontend->ctx, &frontend_info) != 0) {
    hp_send_error(dev, req->seq, HP_ERR_MODEL_NOT_READY, "the audio frontend failed to load");
    return;
  }
  hp_stream_config cfg;
  hp_stream_config_read(&cfg, req->payload);
  const char *problem = hp_stream_start(dev->cfg.stream, &cfg, frontend, &frontend_info.input,
                                        &frontend_info.output, dev->cfg.runner, &dev->model);
  if (problem) {
    hp_send_error(dev, req->seq, HP_ERR_BAD_PAYLOAD, problem);
    return;
  }
  dev->streaming = 1;
  uint8_t *p = hp_put_u32(hp_response_payload(dev), frontend_info.arena_used);
  hp_send_response(dev, HP_MSG_STREAM_START | HP_RESPONSE_BIT, req->seq, (uint32_t)(p - hp_response_payload(dev)));
}

/* Answer: rows so far u32, model runs so far u32, busy ticks for this request u64, detections
 * found u16, detections sent u16, then (label u8, score u8, time_ms u32) per detection sent. */
void hp_handle_stream_audio(hp_device *dev, const hp_frame *req) {
  if (!dev->streaming) {
    hp_send_error(dev, req->seq, HP_ERR_MODEL_NOT_READY, "start a stream first (STREAM_START)");
    return;
  }
  if (req->length == 0 || req->length % 2 != 0) {
    hp_send_error(dev, req->seq, HP_ERR_BAD_PAYLOAD, "STREAM_AUDIO carries int16 samples");
    return;
  }
  static hp_detection found[64];
  uint32_t room = (hp_response_room(dev) - 20u) / 6u;
  uint32_t cap = room < 64u ? room : 64u;
  uint64_t t0 = hp_now(dev);
  int32_t count = hp_stream_push(dev->cfg.stream, req->payload, req->length / 2u, found, cap);
  uint64_t busy = hp_now(dev) - t0;
  if (count < 0) {
    dev->streaming = 0;
    hp_send_error(dev, req->seq, HP_ERR_INVOKE_FAILED, "the frontend or the model failed; start a new stream");
    return;
  }
  uint32_t sent = (uint32_t)count < cap ? (uint32_t)count : cap;
  uint8_t *start = hp_response_payload(dev);
  uint8_t *p = hp_put_u32(start, dev->cfg.stream->rows_total);
  p = hp_put_u32(p, dev->cfg.stream->model_runs);
  p = hp_put_u64(p, busy);
  p = hp_put_u16(p, (uint16_t)count);
  p = hp_put_u16(p, (uint16_t)sent);
  for (uint32_t i = 0; i < sent; ++i) {
    p = hp_put_u8(p, found[i].label);
    p = hp_put_u8(p, found[i].score);
    p = hp_put_u32(p, found[i].time_ms);
  }
  hp_send_response(dev, HP_MSG_STREAM_AUDIO | HP_RESPONSE_BIT, req->seq, (uint32_t)(p - start));
}
