/* The emulated link under the framework stand-ins: one UART (or USB CDC port) on a pseudo-terminal.
 *
 * A receive thread plays the part of the UART's receive interrupt: it takes bytes off the
 * pseudo-terminal no faster than the line rate carries them and stores them in a ring of the size
 * the framework configured. A byte that finds the ring full is lost, as on a real UART; one that
 * arrives while the host's port is at another rate is lost too (a real UART sees framing errors).
 * USB CDC has flow control instead: the thread waits for room, nothing is lost, nothing is paced.
 * Writes cross at the line rate. Pacing is the virtual board's (firmware/sim/sim_pace.h). */
#ifndef HOSTED_UART_H
#define HOSTED_UART_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Before the firmware starts (harness/device/hosted_hal.py): the pseudo-terminal's master side. */
void hosted_uart_attach(int fd);

/* The framework opens the port: a ring of ring_bytes of which `usable` hold data (stm32duino keeps
 * one slot free), paced at `baud`; usb_cdc: flow control, no baud. The first call starts the receive
 * thread; later calls only change the rate (the ring and its contents stay). */
void hosted_uart_begin(uint32_t baud, uint32_t ring_bytes, uint32_t usable, int usb_cdc);
void hosted_uart_set_baud(uint32_t baud);
uint32_t hosted_uart_available(void);
/* As hosted_uart_available, but an empty ring is given up to wait_us to fill: a HAL that polls
 * available() in a loop then does not keep a host core busy (the board's core would spin). */
uint32_t hosted_uart_poll_available(uint32_t wait_us);
/* Up to cap bytes held in the ring, waiting up to timeout_ms for the first. */
uint32_t hosted_uart_read(uint8_t *buf, uint32_t cap, uint32_t timeout_ms);
/* All len bytes, returning once they would have crossed the wire. */
uint32_t hosted_uart_write(const uint8_t *buf, uint32_t len);

/* What the emulation saw, for harness/device/hosted_hal.py. */
uint32_t hosted_uart_baud(void);
uint64_t hosted_uart_lost_full(void);       /* bytes that found the ring full */
uint64_t hosted_uart_lost_wrong_rate(void); /* bytes sent while the two ends' rates differed */
uint64_t hosted_uart_monotonic_ns(void);

#ifdef __cplusplus
}
#endif

#endif
