/* The MLPerf Tiny / EEMBC DUT text protocol, on the same hp_hal and hp_runner as protocol v2.
 *
 * Commands end with '%' (no CR/LF), answers are "\r\n"-terminated lines, every command ends with
 * "m-ready". It follows mlcommons/tiny benchmark/api/internally_implemented.cpp: name, profile,
 * timestamp, db load N, db <hex>, db print, infer [N [W]], results, tokenised as its
 * ee_serial_command_parser_callback. See docs/eembc.md, "harness's DUT and the upstream grammar", for
 * where it deliberately differs (overruns, incomplete inputs and endless counts are refused).
 */
#ifndef EE_DUT_H
#define EE_DUT_H

#include <stdint.h>

#include "hp_device.h"

#ifdef __cplusplus
extern "C" {
#endif

#define EE_CMD_SIZE 80u        /* as the reference: a longer command keeps its first 80 characters */
#define EE_DEFAULT_WARMUPS 10u /* `infer` and `infer N` without W, as the reference (its help text says 0) */
/* Not in the reference, which runs any count up to INT32_MAX (days): larger N or W are refused. */
#define EE_MAX_INFERENCES 1000000u
#define EE_FW_VERSION "ULPMark for tinyML Firmware V0.0.1"
#define EE_DEFAULT_NAME "unspecified" /* the reference's TH_VENDOR_NAME_STRING */
#define EE_DEFAULT_MODEL "vww01"      /* one of the names the reference runner has tests for */

/* What the DUT computes from the bytes it is sent, as the reference submissions' th_load_tensor and
 * th_results do (harness/model/dut.py computes the same on the host). */
typedef enum {
  EE_COMPUTE_MODEL = 0, /* the input tensor's bytes as sent; m-results: each output value, %f (vww01, kws01, ic01) */
  /* ad01: float32 features, each quantized to the int8 input as QuantizeFloatToInt8 (float32
   * round(v / scale) + zero point, halves away from zero, clamped); m-results: one value, %0.3f, the mean
   * over the features of (dequantized output - feature)^2, summed in float32 in feature order. */
  EE_COMPUTE_RECONSTRUCTION_MSE = 1,
} ee_computation;

typedef struct {
  const hp_hal *hal;
  const hp_runner *runner;
  const char *name;  /* m-name-dut-[name]; NULL or "": EE_DEFAULT_NAME */
  const char *model; /* m-model-[model], the runner's test key (ad01, ic01, kws01, vww01); NULL or "": EE_DEFAULT_MODEL */
  uint8_t *buffer;   /* the db buffer (MAX_DB_INPUT_SIZE in the reference) */
  uint32_t buffer_cap;
  ee_computation computation;
  /* 1: an int8 input arrives as uint8, each byte less 128 into the tensor (the reference VWW and IC
   * th_load_tensor); 0: the bytes as they are. */
  uint8_t uint8_input;
  /* Energy mode (EE_CFG_ENERGY_MODE 1 upstream): set, a timestamp is this pulse on the timestamp pin (held
   * high, pulled low for at least 1 us, released: what the runner's IO manager counts) and the banner says
   * m-timestamp-mode-energy; NULL: performance mode, timestamps are m-lap-us- lines. */
  void (*timestamp_pulse)(void *ctx);
} ee_dut_config;

typedef struct {
  ee_dut_config cfg;
  hp_model_info model;
  int32_t runner_status;
  char cmd[EE_CMD_SIZE + 1];
  uint32_t cmd_len;
  uint32_t input_bytes; /* what th_load_tensor takes: the input tensor's bytes, or 4 per feature */
  uint32_t expected;    /* bytes announced by db load */
  uint32_t loaded;
  uint8_t have_results;
} ee_dut;

/* Sets the model up and prints the boot banner. Returns -1 without a buffer. */
int32_t ee_dut_init(ee_dut *dut, const ee_dut_config *cfg);

/* Read what arrives within timeout_ms and run every complete command. < 0 once the link is gone. */
int32_t ee_dut_poll(ee_dut *dut, uint32_t timeout_ms);

#ifdef __cplusplus
}
#endif

#endif
