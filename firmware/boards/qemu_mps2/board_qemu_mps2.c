/* Board glue for QEMU's mps2 machines: CMSDK UART0 as the link, UART1 for diagnostics, SysTick
 * as a 64-bit tick counter. QEMU does not model the DWT cycle counter; SysTick counts virtual
 * time, which under -icount advances with executed instructions: ticks are EMULATED, not cycles. */
#include <stdint.h>

#include "board.h"

#define SYSCLK_HZ 25000000u

typedef struct {
  volatile uint32_t data;
  volatile uint32_t state; /* bit 0 TX full, bit 1 RX full */
  volatile uint32_t ctrl;  /* bit 0 TX enable, bit 1 RX enable */
  volatile uint32_t intstatus;
  volatile uint32_t bauddiv;
} cmsdk_uart;

#define UART0 ((cmsdk_uart *)0x40004000u)
#define UART1 ((cmsdk_uart *)0x40005000u)
#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)
#define SYSTICK_MASK 0x00FFFFFFu

static volatile uint32_t systick_wraps;

void SysTick_Handler(void) { systick_wraps++; }

static uint64_t ticks(void *ctx) {
  (void)ctx;
  uint32_t high, low;
  do {
    high = systick_wraps;
    low = SYST_CVR;
  } while (high != systick_wraps);
  return ((uint64_t)high << 24) + (SYSTICK_MASK - low);
}

static void uart_enable(cmsdk_uart *uart) {
  uart->bauddiv = 16; /* the smallest divider the CMSDK UART accepts */
  uart->ctrl = 3u;
}

static int32_t link_read(void *ctx, uint8_t *buf, uint32_t cap, uint32_t timeout_ms) {
  uint64_t deadline = ticks(ctx) + (uint64_t)timeout_ms * (SYSCLK_HZ / 1000u);
  uint32_t n = 0;
  while (n < cap) {
    if (UART0->state & 2u) {
      buf[n++] = (uint8_t)UART0->data;
      deadline = ticks(ctx) + SYSCLK_HZ / 10000u; /* after a byte, wait 0.1 ms for the next */
    } else if (ticks(ctx) > deadline) {
      break;
    }
  }
  return (int32_t)n;
}

static void uart_put(cmsdk_uart *uart, uint8_t byte) {
  while (uart->state & 1u) {
  }
  uart->data = byte;
}

static int32_t link_write(void *ctx, const uint8_t *buf, uint32_t len) {
  (void)ctx;
  for (uint32_t i = 0; i < len; ++i) uart_put(UART0, buf[i]);
  return (int32_t)len;
}

static const hp_hal hal = {
    0, link_read, link_write, ticks, SYSCLK_HZ, HP_TICKS_EMULATED,
    0, /* cpu_hz: an emulated core has no meaningful clock rate */
    1, /* the CMSDK UART holds one received byte */
};

void board_init(void) {
  uart_enable(UART0);
  uart_enable(UART1);
  SYST_RVR = SYSTICK_MASK;
  SYST_CVR = 0;
  SYST_CSR = 7u; /* processor clock, interrupt on wrap, enable */
}

const hp_hal *board_hal(void) { return &hal; }

void board_debug_write(const char *text, unsigned length) {
  for (unsigned i = 0; i < length; ++i) uart_put(UART1, (uint8_t)text[i]);
}
