/* The MLPerf Tiny / EEMBC DUT text protocol, on the same hp_hal and hp_runner as protocol v2.
 *
 * Commands end with '%' (no CR/LF), answers are "\r\n"-terminated lines, every command ends with
 * "m-ready". It follows mlcommons/tiny benchmark/api/internally_implemented.cpp: name, profile,
 * timestamp, db load N, db <hex>, db print, infer N [W], results. See docs/eembc.md for where it
 * deliberately differs (oversized loads and incomplete inputs are refused with an e- line).
 */
#ifndef EE_DUT_H
#define EE_DUT_H

#include <stdint.h>

#include "hp_device.h"

#ifdef __cplusplus
extern "C" {
#endif

#define EE_CMD_SIZE 80u          /* as the reference firmware: a longer command overwrites its last slot */
#define EE_DEFAULT_WARMUPS 10u   /* `infer N` without W, as the reference (its help text says 0) */

typedef struct {
  const hp_hal *hal;
  const hp_runner *runner;
  const char *name;  /* m-name-dut-[name] */
  const char *model; /* m-model-[model], e.g. vww01 */
  uint8_t *buffer;   /* the db buffer (MAX_DB_INPUT_SIZE in the reference) */
  uint32_t buffer_cap;
} ee_dut_config;

typedef struct {
  ee_dut_config cfg;
  hp_model_info model;
  int32_t runner_status;
  char cmd[EE_CMD_SIZE + 1];
  uint32_t cmd_len;
  uint32_t expected; /* bytes announced by db load */
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
