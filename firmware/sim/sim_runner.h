/* Runners whose model lives on the host side of a callback: the virtual board and the host's
 * streaming reference plug the TFLM host interpreter in here. */
#ifndef SIM_RUNNER_H
#define SIM_RUNNER_H

#include "hp_device.h"

typedef int32_t (*sim_invoke_fn)(void *user);
typedef int32_t (*sim_setup_fn)(void *user); /* NULL: nothing to reset */
/* One invoke handing each operator's outputs to hp_trace_operator(sink, ...) (hp_trace.h). */
typedef int32_t (*sim_trace_fn)(void *user, struct hp_trace_sink *sink);

typedef struct {
  hp_runner runner;
  hp_model_info info;
  int32_t status;
  sim_invoke_fn invoke;
  sim_setup_fn setup;
  void *user;
  uint8_t *input;
  uint8_t *output;
} sim_runner;

sim_runner *sim_runner_create(const hp_model_info *info, int32_t status, sim_invoke_fn invoke, sim_setup_fn setup,
                              void *user);
uint8_t *sim_runner_input(sim_runner *r);
uint8_t *sim_runner_output(sim_runner *r);
void sim_runner_destroy(sim_runner *r);

#endif
