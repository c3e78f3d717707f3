/* Stand-in for firmware/runners/tflm: the model runs on the host's TFLM interpreter behind a
 * callback (harness/device/hosted_hal.py plugs TflmRunner in, as the virtual board does). Like the
 * TFLM runner on these boards it has a blocking invoke only (one input slot); an invoke lasts at
 * least the emulated inference time, during which only the UART's receive thread runs. */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>

#include "hosted_uart.h"
#include "runner.h"
#include "sim_pace.h"
#include "sim_runner.h"

static struct {
  hp_model_info info;
  int32_t status;
  sim_invoke_fn invoke;
  sim_trace_fn trace;
  void *user;
  uint8_t *input;
  uint8_t *output;
  uint64_t invoke_ns;
} model = {.status = HARNESS_RUNNER_NO_MODEL};

/* Before the firmware starts. Returns 0, or -1 if the tensors could not be allocated. */
int32_t hosted_runner_configure(const hp_model_info *info, int32_t status, sim_invoke_fn invoke, void *user,
                                uint32_t invoke_us) {
  model.info = *info;
  model.status = status;
  model.invoke = invoke;
  model.user = user;
  model.invoke_ns = (uint64_t)invoke_us * 1000u;
  model.input = calloc(1, info->input.bytes ? info->input.bytes : 1);
  model.output = calloc(1, info->output.bytes ? info->output.bytes : 1);
  return model.input && model.output ? 0 : -1;
}

/* Layer traces go to `trace` (harness/device/layer_tracer.py, as on the virtual board). */
void hosted_runner_trace(sim_trace_fn trace) { model.trace = trace; }

uint8_t *hosted_runner_input(void) { return model.input; }

uint8_t *hosted_runner_output(void) { return model.output; }

static int32_t setup(void *ctx, hp_model_info *info) {
  (void)ctx;
  *info = model.info;
  return model.status;
}

static uint8_t *input(void *ctx) {
  (void)ctx;
  return model.input;
}

static const uint8_t *output(void *ctx) {
  (void)ctx;
  return model.output;
}

static int32_t invoke(void *ctx) {
  (void)ctx;
  if (!model.invoke) return -1;
  uint64_t done = sim_monotonic_ns() + model.invoke_ns;
  hosted_uart_invoke_edge(0);
  int32_t status = model.invoke(model.user);
  sim_sleep_until(done);
  hosted_uart_invoke_edge(1);
  return status;
}

static int32_t invoke_traced(void *ctx, struct hp_trace_sink *sink) {
  (void)ctx;
  return model.trace ? model.trace(model.user, sink) : -1;
}

static const hp_runner runner = {0, setup, input, invoke, output, 0, 0, 0, invoke_traced};

const hp_runner *model_runner(void) { return &runner; }

const hp_runner *frontend_runner(void) { return 0; }
