/* Stand-in for FreeRTOS's task.h (ESP-IDF's SMP additions): a task is a host thread. */
#ifndef HOSTED_FREERTOS_TASK_H
#define HOSTED_FREERTOS_TASK_H

#include "freertos/FreeRTOS.h"

BaseType_t xTaskCreatePinnedToCore(TaskFunction_t pxTaskCode, const char *pcName, const uint32_t ulStackDepth,
                                   void *pvParameters, UBaseType_t uxPriority, TaskHandle_t *pxCreatedTask,
                                   const BaseType_t xCoreID);

#endif
