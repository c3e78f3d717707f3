#include "sim_runner.h"

#include <stdlib.h>

#include "hp_stream.h"

static int32_t callback_setup(void *ctx, hp_model_info *info) {
  sim_runner *r = ctx;
  if (r->status == 0 && r->setup) r->status = r->setup(r->user);
  *info = r->info;
  return r->status;
}

static uint8_t *callback_input(void *ctx) { return ((sim_runner *)ctx)->input; }

static const uint8_t *callback_output(void *ctx) { return ((sim_runner *)ctx)->output; }

static int32_t callback_invoke(void *ctx) {
  sim_runner *r = ctx;
  return r->invoke(r->user);
}

void sim_runner_destroy(sim_runner *r) {
  if (!r) return;
  free(r->input);
  free(r->output);
  free(r);
}

sim_runner *sim_runner_create(const hp_model_info *info, int32_t status, sim_invoke_fn invoke, sim_setup_fn setup,
                              void *user) {
  sim_runner *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->info = *info;
  r->status = status;
  r->invoke = invoke;
  r->setup = setup;
  r->user = user;
  r->input = calloc(1, info->input.bytes ? info->input.bytes : 1);
  r->output = calloc(1, info->output.bytes ? info->output.bytes : 1);
  if (!r->input || !r->output) {
    sim_runner_destroy(r);
    return NULL;
  }
  r->runner = (hp_runner){r, callback_setup, callback_input, callback_invoke, callback_output,
                          NULL /* the TFLM host interpreter has no per-operator timer */,
                          NULL, NULL /* invokes run to completion */, NULL /* no layer trace */};
  return r;
}

uint8_t *sim_runner_input(sim_runner *r) { return r->input; }

uint8_t *sim_runner_output(sim_runner *r) { return r->output; }

/* The host's streaming reference: the device's pipeline, run here on two callback runners. */
hp_stream *sim_stream_create(void) { return calloc(1, sizeof(hp_stream)); }

void sim_stream_destroy(hp_stream *s) { free(s); }

const char *sim_stream_start(hp_stream *s, const uint8_t *config, sim_runner *frontend, sim_runner *model) {
  hp_model_info frontend_info, model_info;
  if (frontend->runner.setup(frontend, &frontend_info) != 0) return "the audio frontend failed to load";
  if (model->runner.setup(model, &model_info) != 0) return "the model failed to load";
  hp_stream_config cfg;
  hp_stream_config_read(&cfg, config);
  return hp_stream_start(s, &cfg, &frontend->runner, &frontend_info.input, &frontend_info.output, &model->runner,
                         &model_info);
}
