#include "hp_stream.h"

#include <string.h>

#include "hp_bytes.h"

void hp_stream_config_read(hp_stream_config *cfg, const uint8_t *p) {
  uint32_t *fields[] = {&cfg->sample_rate,  &cfg->window_samples, &cfg->stride_samples, &cfg->frames,
                        &cfg->row_bytes,    &cfg->model_every,    &cfg->classes,        &cfg->average_ms,
                        &cfg->min_count,    &cfg->suppression_ms, &cfg->keyword_mask,   &cfg->threshold};
  for (uint32_t i = 0; i < sizeof fields / sizeof fields[0]; ++i) *fields[i] = hp_get_u32(p + 4u * i);
}

/* Bytes per score of a model output type the recognizer reads; 0 for any other type. */
static uint32_t score_width(uint8_t dtype) {
  return dtype == HP_DTYPE_INT8 || dtype == HP_DTYPE_UINT8 ? 1u : dtype == HP_DTYPE_FLOAT32 ? 4u : 0u;
}

/* Every output type on one scale, 0..255: int8 + 128, uint8 as it is, a probability x 255 rounded.
 * The probability takes one float multiply (by 255 x 256) and integer rounding: a multiply-add a
 * compiler could fuse on one target and not on another would let device and host differ. */
static uint8_t score_of(const uint8_t *raw, uint32_t c, uint8_t dtype) {
  if (dtype == HP_DTYPE_INT8) return (uint8_t)((int8_t)raw[c] + 128);
  if (dtype == HP_DTYPE_UINT8) return raw[c];
  float p;
  memcpy(&p, raw + 4u * c, sizeof p);
  if (!(p > 0.0f)) return 0; /* NaN included */
  if (p >= 1.0f) return 255;
  uint32_t in_256ths = (uint32_t)(p * 65280.0f);
  return (uint8_t)((in_256ths + 128u) >> 8);
}

const char *hp_stream_start(hp_stream *s, const hp_stream_config *cfg, const hp_runner *frontend,
                            const hp_tensor_info *frontend_in, const hp_tensor_info *frontend_out,
                            const hp_runner *model, const hp_model_info *model_info) {
  if (!frontend) return "this firmware has no audio frontend";
  if (cfg->sample_rate == 0 || cfg->window_samples == 0 || cfg->window_samples > HP_STREAM_MAX_WINDOW ||
      cfg->stride_samples == 0 || cfg->stride_samples > cfg->window_samples)
    return "window and stride must satisfy 0 < stride <= window <= 1024 samples";
  /* Divided, not multiplied: a product of two u32 could wrap into range and overrun `features`. */
  if (cfg->frames == 0 || cfg->row_bytes == 0 || cfg->frames > HP_STREAM_MAX_FEATURES / cfg->row_bytes)
    return "frames x row bytes must be 1..4096";
  if (cfg->model_every == 0 || cfg->model_every > HP_STREAM_MAX_FEATURES || cfg->classes == 0 ||
      cfg->classes > HP_STREAM_MAX_CLASSES)
    return "model_every must be 1..4096 and classes 1..16";
  /* The results the averaging window holds must fit the history and reach min_count. */
  uint64_t result_period = (uint64_t)cfg->stride_samples * cfg->model_every; /* samples between results */
  uint64_t per_window = ((uint64_t)cfg->average_ms * cfg->sample_rate + 1000u * result_period - 1u) /
                        (1000u * result_period);
  if (cfg->average_ms == 0 || per_window > HP_STREAM_MAX_HISTORY)
    return "average_ms must hold 1..64 model results";
  if (cfg->min_count == 0 || cfg->min_count > per_window)
    return "min_count must be at least 1 and no more than the results average_ms holds";
  if (frontend_in->bytes != 2u * cfg->window_samples || frontend_out->bytes != cfg->row_bytes)
    return "the frontend's tensors do not match the window and row size";
  uint32_t width = score_width(model_info->output.dtype);
  if (width == 0) return "the model's output must be int8, uint8 or float32 scores";
  if (model_info->input.bytes != cfg->frames * cfg->row_bytes || model_info->output.bytes != cfg->classes * width)
    return "the model's tensors do not match frames x row bytes and classes";
  memset(s, 0, sizeof *s);
  s->cfg = *cfg;
  s->frontend = frontend;
  s->model = model;
  s->score_dtype = model_info->output.dtype;
  return 0;
}

static uint32_t window_end_ms(const hp_stream *s) {
  uint64_t samples = (uint64_t)(s->rows_total - 1u) * s->cfg.stride_samples + s->cfg.window_samples;
  return (uint32_t)(samples * 1000u / s->cfg.sample_rate);
}

/* Average the results of the last average_ms; a keyword whose average clears the threshold is a
 * detection unless one was reported less than suppression_ms ago. */
static int recognize(hp_stream *s, uint32_t now_ms, const uint8_t *scores, hp_detection *out) {
  const hp_stream_config *cfg = &s->cfg;
  if (s->history_count == HP_STREAM_MAX_HISTORY) {
    s->history_start = (s->history_start + 1u) % HP_STREAM_MAX_HISTORY;
    s->history_count--;
  }
  uint32_t slot = (s->history_start + s->history_count++) % HP_STREAM_MAX_HISTORY;
  s->history_time[slot] = now_ms;
  memcpy(s->history_scores[slot], scores, cfg->classes);
  while (s->history_count > 0 && now_ms - s->history_time[s->history_start] >= cfg->average_ms) {
    s->history_start = (s->history_start + 1u) % HP_STREAM_MAX_HISTORY;
    s->history_count--;
  }
  if (s->history_count < cfg->min_count) return 0;
  uint32_t best = 0, best_sum = 0;
  for (uint32_t c = 0; c < cfg->classes; ++c) {
    uint32_t sum = 0;
    for (uint32_t i = 0; i < s->history_count; ++i)
      sum += s->history_scores[(s->history_start + i) % HP_STREAM_MAX_HISTORY][c];
    if (sum > best_sum) best = c, best_sum = sum;
  }
  uint32_t average = best_sum / s->history_count;
  if (!(cfg->keyword_mask >> best & 1u) || average < cfg->threshold) return 0;
  if (s->detected && now_ms - s->last_detection_ms < cfg->suppression_ms) return 0;
  s->detected = 1;
  s->last_detection_ms = now_ms;
  out->label = (uint8_t)best;
  out->score = (uint8_t)average;
  out->time_ms = now_ms;
  return 1;
}

static int32_t add_row(hp_stream *s, hp_detection *out, uint32_t room, uint32_t *found) {
  const hp_stream_config *cfg = &s->cfg;
  const hp_runner *fe = s->frontend;
  memcpy(fe->input(fe->ctx), s->audio, 2u * cfg->window_samples);
  if (fe->invoke(fe->ctx) != 0) return -1;
  uint32_t total = cfg->frames * cfg->row_bytes;
  if (s->rows_have == cfg->frames) {
    memmove(s->features, s->features + cfg->row_bytes, total - cfg->row_bytes);
    s->rows_have--;
  }
  memcpy(s->features + s->rows_have++ * cfg->row_bytes, fe->output(fe->ctx), cfg->row_bytes);
  s->rows_total++;
  if (s->rows_have < cfg->frames || (s->rows_total - cfg->frames) % cfg->model_every != 0) return 0;
  const hp_runner *model = s->model;
  memcpy(model->input(model->ctx), s->features, total);
  if (model->invoke(model->ctx) != 0) return -1;
  s->model_runs++;
  const uint8_t *raw = (const uint8_t *)model->output(model->ctx);
  uint8_t scores[HP_STREAM_MAX_CLASSES];
  for (uint32_t c = 0; c < cfg->classes; ++c) scores[c] = score_of(raw, c, s->score_dtype);
  hp_detection detection;
  if (recognize(s, window_end_ms(s), scores, &detection)) {
    if (*found < room) out[*found] = detection;
    ++*found; /* counted even when the caller's room is full, so it can tell */
  }
  return 0;
}

int32_t hp_stream_push(hp_stream *s, const uint8_t *samples_le, uint32_t count, hp_detection *out, uint32_t cap) {
  uint32_t found = 0;
  const hp_stream_config *cfg = &s->cfg;
  for (uint32_t i = 0; i < count && !s->failed; ++i) {
    s->audio[s->audio_have++] = (int16_t)hp_get_u16(samples_le + 2u * i);
    if (s->audio_have < cfg->window_samples) continue;
    if (add_row(s, out, cap, &found) != 0) s->failed = 1;
    uint32_t keep = cfg->window_samples - cfg->stride_samples;
    memmove(s->audio, s->audio + cfg->stride_samples, 2u * keep);
    s->audio_have = keep;
  }
  return s->failed ? -1 : (int32_t)found;
}
