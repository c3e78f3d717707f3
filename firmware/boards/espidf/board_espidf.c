/* Board glue for ESP-IDF on the ESP32: UART0 (the USB bridge) as the link through the UART driver,
 * the CPU cycle counter as ticks (kind CPU_CYCLES) extended to 64 bits against esp_timer, the
 * harness task pinned to one core (the cycle counter is per core).
 *
 * The driver's interrupt moves received bytes into its ring buffer (HP_LINK_RX_BUFFER_BYTES, the
 * figure HELLO announces) while the model runs. SET_BAUD: uart_wait_tx_done until the answer has
 * left, then uart_set_baudrate. docs/hal_link.md has the details. */
#include "driver/uart.h"
#include "esp_cpu.h"
#include "esp_log.h"
#include "esp_rom_sys.h"
#include "esp_timer.h"
#include "freertos/FreeRTOS.h"
#include "freertos/task.h"

#include "board.h"
#include "harness_build_config.h"
#include "tick_extend.h"

#define LINK_UART UART_NUM_0
#define HARNESS_TASK_STACK 16384
#define HARNESS_TASK_CORE 1
/* The highest rate SET_BAUD accepts: what the usual USB-serial bridges carry (CH340, CP2102N; a
 * CP2102 stops at 1 Mbaud, where the host's check at the new rate fails and both ends fall back). */
#ifndef HP_LINK_MAX_BAUD
#define HP_LINK_MAX_BAUD 2000000u
#endif
#define TX_DONE_WAIT_MS 100 /* far more than a response frame takes at the slowest rate */

static uint64_t cycles(void *ctx) {
  (void)ctx;
  uint32_t exact = (uint32_t)esp_cpu_get_cycle_count();
  uint64_t approximate = (uint64_t)esp_timer_get_time() * esp_rom_get_cpu_ticks_per_us();
  return extend_ticks(exact, approximate);
}

static int32_t link_read(void *ctx, uint8_t *buf, uint32_t cap, uint32_t timeout_ms) {
  (void)ctx;
  int got = uart_read_bytes(LINK_UART, buf, 1, pdMS_TO_TICKS(timeout_ms)); /* wait for the first byte */
  if (got <= 0) return 0;
  size_t buffered = 0;
  uart_get_buffered_data_len(LINK_UART, &buffered);
  if (buffered > cap - 1) buffered = cap - 1;
  if (buffered > 0) got += uart_read_bytes(LINK_UART, buf + 1, buffered, 0);
  return got;
}

static int32_t link_write(void *ctx, const uint8_t *buf, uint32_t len) {
  (void)ctx;
  return uart_write_bytes(LINK_UART, (const char *)buf, len);
}

static uint32_t link_baud = HP_LINK_BAUD;

/* Called by the core after the SET_BAUD answer was written (uart_write_bytes without a transmit
 * ring returns once the bytes are in the FIFO): wait for the FIFO to drain and the last bit to
 * leave, then switch. The receive ring keeps what it holds. */
static uint32_t link_set_baud(void *ctx, uint32_t baud) {
  (void)ctx;
  uint32_t before = link_baud;
  uart_wait_tx_done(LINK_UART, pdMS_TO_TICKS(TX_DONE_WAIT_MS));
  if (uart_set_baudrate(LINK_UART, baud) != ESP_OK) return 0;
  link_baud = baud;
  return before;
}

static hp_hal hal = {0, link_read, link_write, cycles, 0, HP_TICKS_CPU_CYCLES, 0, HP_LINK_RX_BUFFER_BYTES,
                     link_set_baud, HP_LINK_MAX_BAUD, 0};

void board_init(void) {
  esp_log_level_set("*", ESP_LOG_NONE); /* logs would share the link's UART */
  const uart_config_t config = {
      .baud_rate = HP_LINK_BAUD,
      .data_bits = UART_DATA_8_BITS,
      .parity = UART_PARITY_DISABLE,
      .stop_bits = UART_STOP_BITS_1,
      .flow_ctrl = UART_HW_FLOWCTRL_DISABLE,
      .source_clk = UART_SCLK_DEFAULT,
  };
  uart_driver_install(LINK_UART, HP_LINK_RX_BUFFER_BYTES, 0, 0, NULL, 0);
  uart_param_config(LINK_UART, &config);
  hal.tick_hz = esp_rom_get_cpu_ticks_per_us() * 1000000u;
  hal.cpu_hz = hal.tick_hz;
}

const hp_hal *board_hal(void) { return &hal; }

void board_debug_write(const char *text, unsigned length) {
  (void)text;
  (void)length;
}

static void harness_task(void *arg) {
  (void)arg;
  harness_firmware_run();
}

void app_main(void) {
  xTaskCreatePinnedToCore(harness_task, "harness", HARNESS_TASK_STACK, NULL, 5, NULL, HARNESS_TASK_CORE);
}
