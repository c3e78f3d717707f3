/* Keyword streaming on the device: continuous audio in, keyword detections out.
 *
 * The deployed pipeline, once, for every target: a frontend runner turns each window of audio into
 * a feature row, the model runner classifies the last `frames` rows every `model_every` rows, and
 * the recognizer averages the model's scores over time and reports a keyword when its average
 * clears a threshold, at most once per suppression interval. The virtual board and the host
 * reference run this same code with the TFLM host interpreter behind both runners.
 */
#ifndef HP_STREAM_H
#define HP_STREAM_H

#include <stdint.h>

#include "hp_device.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HP_STREAM_MAX_WINDOW 1024u   /* audio samples per frontend window */
#define HP_STREAM_MAX_FEATURES 4096u /* bytes of the model's input (frames x row bytes) */
#define HP_STREAM_MAX_CLASSES 16u
#define HP_STREAM_MAX_HISTORY 64u /* model results the recognizer can average over */
#define HP_STREAM_CONFIG_BYTES 48u

typedef struct {
  uint32_t sample_rate;    /* Hz: turns sample counts into milliseconds */
  uint32_t window_samples; /* int16 samples the frontend takes */
  uint32_t stride_samples; /* a new feature row every this many samples */
  uint32_t frames;         /* feature rows in the model's input */
  uint32_t row_bytes;      /* bytes of one feature row (the frontend's output) */
  uint32_t model_every;    /* run the model every this many new rows */
  uint32_t classes;        /* scores the model outputs (int8, uint8, or float32 probabilities) */
  uint32_t average_ms;     /* recognizer: average the results of this long */
  uint32_t min_count;      /* ... and decide only with at least this many of them */
  uint32_t suppression_ms; /* no detection for this long after one */
  uint32_t keyword_mask;   /* bit i: class i is a keyword (silence and unknown are not) */
  uint32_t threshold;      /* average score on 0..255 a detection needs: int8 + 128, uint8, or float x 255 */
} hp_stream_config;

typedef struct {
  uint8_t label;    /* class index */
  uint8_t score;    /* its average score, 0..255 */
  uint32_t time_ms; /* decision time: the end of the audio window whose result decided it */
} hp_detection;

typedef struct hp_stream {
  hp_stream_config cfg;
  const hp_runner *frontend;
  const hp_runner *model;
  uint8_t score_dtype; /* the model output's TfLiteType */
  int16_t audio[HP_STREAM_MAX_WINDOW];
  uint32_t audio_have;
  uint8_t features[HP_STREAM_MAX_FEATURES];
  uint32_t rows_have;
  uint32_t rows_total;
  uint32_t model_runs;
  uint32_t history_time[HP_STREAM_MAX_HISTORY];
  uint8_t history_scores[HP_STREAM_MAX_HISTORY][HP_STREAM_MAX_CLASSES];
  uint32_t history_start, history_count;
  uint8_t detected;
  uint32_t last_detection_ms;
  int32_t failed; /* a runner's non-zero status ends the stream */
} hp_stream;

/* Reads a STREAM_START payload (HP_STREAM_CONFIG_BYTES, twelve u32 LE in hp_stream_config order). */
void hp_stream_config_read(hp_stream_config *cfg, const uint8_t *payload);

/* Checks the configuration against the limits and both runners' tensors; 0 when they agree, else
 * a short reason. Starts an empty stream (the caller resets a stateful frontend). */
const char *hp_stream_start(hp_stream *s, const hp_stream_config *cfg, const hp_runner *frontend,
                            const hp_tensor_info *frontend_in, const hp_tensor_info *frontend_out,
                            const hp_runner *model, const hp_model_info *model_info);

/* Feeds `count` int16 samples, little-endian (a payload: no alignment needed). Writes at most `cap`
 * detections and returns how many were found, which can exceed cap (< 0: a runner failed). */
int32_t hp_stream_push(hp_stream *s, const uint8_t *samples_le, uint32_t count, hp_detection *out, uint32_t cap);

#ifdef __cplusplus
}
#endif

#endif
