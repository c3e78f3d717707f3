/* Stand-in for FreeRTOS as ESP-IDF configures it: the types and the tick rate the stand-ins use.
 * CONFIG_FREERTOS_HZ is ESP-IDF's default, 100: pdMS_TO_TICKS rounds down to 10 ms steps there too. */
#ifndef HOSTED_FREERTOS_H
#define HOSTED_FREERTOS_H

#include <stdint.h>

typedef int BaseType_t;
typedef unsigned int UBaseType_t;
typedef uint32_t TickType_t;
typedef void *QueueHandle_t;
typedef void *TaskHandle_t;
typedef void (*TaskFunction_t)(void *);

#define configTICK_RATE_HZ 100u
#define pdMS_TO_TICKS(ms) ((TickType_t)(((TickType_t)(ms) * (TickType_t)configTICK_RATE_HZ) / (TickType_t)1000u))
#define pdPASS 1
#define pdFAIL 0

#endif
