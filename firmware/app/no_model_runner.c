/* Self-test firmware: no model. HELLO reports HARNESS_RUNNER_NO_MODEL; LINK_TEST and PERF work. */
#include "runner.h"

static int32_t setup(void *ctx, hp_model_info *info) {
  (void)ctx;
  (void)info;
  return HARNESS_RUNNER_NO_MODEL;
}

static uint8_t *no_buffer(void *ctx) {
  (void)ctx;
  return 0;
}

static int32_t no_invoke(void *ctx) {
  (void)ctx;
  return -1;
}

static const uint8_t *no_output(void *ctx) {
  (void)ctx;
  return 0;
}

static const hp_runner runner = {0, setup, no_buffer, no_invoke, no_output, 0};

const hp_runner *model_runner(void) { return &runner; }

const hp_runner *frontend_runner(void) { return 0; }
