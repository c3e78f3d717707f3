/* Board glue for QEMU's mps2 machines: CMSDK UART0 as the link, UART1 for diagnostics, and the
 * CMSDK dual timer as a 64-bit tick counter. QEMU does not model the DWT cycle counter; these timers
 * count virtual time, which under -icount advances with executed instructions: ticks are EMULATED,
 * not cycles.
 *
 * The counter uses no interrupt: an interrupt landing inside a measurement would add its own
 * instructions to some runs and not others. Timer 1 counts at 25 MHz (exact, wraps every 172 s of
 * virtual time); timer 2 counts the same time at 25 MHz / 256 (wraps every 12 h) and tells how many
 * times timer 1 wrapped. */
#include <stdint.h>

#include "board.h"
#include "tick_extend.h"

#define SYSCLK_HZ 25000000u

typedef struct {
  volatile uint32_t data;
  volatile uint32_t state; /* bit 0 TX full, bit 1 RX full */
  volatile uint32_t ctrl;  /* bit 0 TX enable, bit 1 RX enable */
  volatile uint32_t intstatus;
  volatile uint32_t bauddiv;
} cmsdk_uart;

typedef struct {
  volatile uint32_t load;
  volatile uint32_t value;
  volatile uint32_t control;
  volatile uint32_t intclr;
  volatile uint32_t ris;
  volatile uint32_t mis;
  volatile uint32_t bgload;
  volatile uint32_t reserved;
} cmsdk_dualtimer_counter;

#define UART0 ((cmsdk_uart *)0x40004000u)
#define UART1 ((cmsdk_uart *)0x40005000u)
#define FINE_TIMER ((cmsdk_dualtimer_counter *)0x40002000u)
#define COARSE_TIMER ((cmsdk_dualtimer_counter *)0x40002020u)
#define TIMER_ENABLE 0x80u
#define TIMER_PERIODIC 0x40u
#define TIMER_PRESCALE_256 0x08u
#define TIMER_32BIT 0x02u
#define COARSE_SHIFT 8u /* the coarse timer's prescaler: 256 = 2^8 */

void SysTick_Handler(void) {}

static uint64_t ticks(void *ctx) {
  (void)ctx;
  uint32_t coarse = 0xFFFFFFFFu - COARSE_TIMER->value;
  uint32_t fine = 0xFFFFFFFFu - FINE_TIMER->value;
  return extend_ticks(fine, (uint64_t)coarse << COARSE_SHIFT);
}

static void timer_start(cmsdk_dualtimer_counter *timer, uint32_t prescale) {
  timer->control = 0;
  timer->load = 0xFFFFFFFFu;
  timer->bgload = 0xFFFFFFFFu;
  timer->control = TIMER_ENABLE | TIMER_PERIODIC | TIMER_32BIT | prescale;
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
  timer_start(COARSE_TIMER, TIMER_PRESCALE_256);
  timer_start(FINE_TIMER, 0);
}

const hp_hal *board_hal(void) { return &hal; }

void board_debug_write(const char *text, unsigned length) {
  for (unsigned i = 0; i < length; ++i) uart_put(UART1, (uint8_t)text[i]);
}
