/* The stand-in ESP-IDF calls (driver/uart.h, esp_cpu.h, esp_timer.h, esp_rom_sys.h, esp_log.h,
 * freertos/task.h), on the emulated UART (hosted_uart.h) and host threads. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>

#include "driver/uart.h"
#include "esp_cpu.h"
#include "esp_log.h"
#include "esp_rom_sys.h"
#include "esp_timer.h"
#include "freertos/task.h"
#include "hosted_uart.h"

#ifndef HOSTED_CPU_HZ
#define HOSTED_CPU_HZ 240000000u
#endif
#define TICK_MS (1000u / configTICK_RATE_HZ)

static uint64_t boot_ns;
static uint32_t ring_bytes;

uint32_t esp_rom_get_cpu_ticks_per_us(void) { return HOSTED_CPU_HZ / 1000000u; }

int64_t esp_timer_get_time(void) { return (int64_t)((hosted_uart_monotonic_ns() - boot_ns) / 1000u); }

esp_cpu_cycle_count_t esp_cpu_get_cycle_count(void) {
  uint64_t ns = hosted_uart_monotonic_ns() - boot_ns;
  return (esp_cpu_cycle_count_t)(ns * (HOSTED_CPU_HZ / 1000000u) / 1000u);
}

void esp_log_level_set(const char *tag, esp_log_level_t level) {
  (void)tag;
  (void)level;
}

esp_err_t uart_driver_install(uart_port_t uart_num, int rx_buffer_size, int tx_buffer_size, int queue_size,
                              QueueHandle_t *uart_queue, int intr_alloc_flags) {
  (void)uart_num;
  (void)tx_buffer_size;
  (void)queue_size;
  (void)uart_queue;
  (void)intr_alloc_flags;
  if (rx_buffer_size <= 128) return ESP_FAIL; /* the real driver wants more than the hardware FIFO */
  ring_bytes = (uint32_t)rx_buffer_size;
  return ESP_OK;
}

esp_err_t uart_param_config(uart_port_t uart_num, const uart_config_t *uart_config) {
  (void)uart_num;
  if (!ring_bytes) return ESP_FAIL;
  hosted_uart_begin((uint32_t)uart_config->baud_rate, ring_bytes, ring_bytes);
  return ESP_OK;
}

esp_err_t uart_set_baudrate(uart_port_t uart_num, uint32_t baudrate) {
  (void)uart_num;
  hosted_uart_set_baud(baudrate);
  return ESP_OK;
}

esp_err_t uart_wait_tx_done(uart_port_t uart_num, TickType_t ticks_to_wait) {
  (void)uart_num;
  (void)ticks_to_wait;
  return ESP_OK; /* writes return once their bytes have crossed the wire */
}

int uart_read_bytes(uart_port_t uart_num, void *buf, uint32_t length, TickType_t ticks_to_wait) {
  (void)uart_num;
  uint8_t *out = buf;
  uint64_t deadline = hosted_uart_monotonic_ns() + (uint64_t)ticks_to_wait * TICK_MS * 1000000u;
  uint32_t got = hosted_uart_read(out, length, 0);
  while (got < length) {
    uint64_t now = hosted_uart_monotonic_ns();
    if (now >= deadline) break;
    uint32_t left_ms = (uint32_t)((deadline - now + 999999u) / 1000000u);
    got += hosted_uart_read(out + got, length - got, left_ms);
  }
  return (int)got;
}

int uart_write_bytes(uart_port_t uart_num, const void *src, size_t size) {
  (void)uart_num;
  return (int)hosted_uart_write(src, (uint32_t)size);
}

esp_err_t uart_get_buffered_data_len(uart_port_t uart_num, size_t *size) {
  (void)uart_num;
  *size = hosted_uart_available();
  return ESP_OK;
}

typedef struct {
  TaskFunction_t code;
  void *arg;
} task_start;

static void *run_task(void *arg) {
  task_start *start = arg;
  start->code(start->arg);
  return NULL;
}

BaseType_t xTaskCreatePinnedToCore(TaskFunction_t pxTaskCode, const char *pcName, const uint32_t ulStackDepth,
                                   void *pvParameters, UBaseType_t uxPriority, TaskHandle_t *pxCreatedTask,
                                   const BaseType_t xCoreID) {
  (void)pcName;
  (void)ulStackDepth;
  (void)uxPriority;
  (void)xCoreID;
  static task_start start; /* one task: the harness */
  start.code = pxTaskCode;
  start.arg = pvParameters;
  pthread_t thread;
  if (pthread_create(&thread, NULL, run_task, &start) != 0) return pdFAIL;
  if (pxCreatedTask) *pxCreatedTask = (TaskHandle_t)0;
  return pdPASS;
}

void app_main(void);

/* What ESP-IDF's startup does for the application: app_main() on the main task, which returns
 * while the tasks it created run on. harness/device/hosted_hal.py calls this once the link and the
 * runner are in place. */
void hosted_main(void) {
  boot_ns = hosted_uart_monotonic_ns();
  app_main();
}
