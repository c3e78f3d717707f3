/* The model runner linked into this firmware: TFLM (firmware/runners/tflm) or none (self-test). */
#ifndef HARNESS_RUNNER_H
#define HARNESS_RUNNER_H

#include "hp_device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Runner status a firmware built without a model reports in HELLO. */
#define HARNESS_RUNNER_NO_MODEL 2

const hp_runner *model_runner(void);

/* The audio frontend for keyword streaming, or NULL in firmware built without one. */
const hp_runner *frontend_runner(void);

#ifdef __cplusplus
}
#endif

#endif
