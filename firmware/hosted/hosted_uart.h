/* The emulated link under the framework stand-ins: one UART (or USB CDC port) on a pseudo-terminal.
 *
 * A receive thread plays the part of the UART's receive interrupt: it takes bytes off the
 * pseudo-terminal no faster than the line rate carries them and stores them in a ring of the size
 * the framework configured. A byte that finds the ring full is lost, as on a real UART; one that
 * arrives while the host's port is at another rate is lost too (a real UART sees framing errors).
 * Writes cross at the line rate. Pacing is the virtual board's (firmware/sim/sim_pace.h).
 *
 * USB CDC (hosted_usb_*) is the bulk OUT endpoint instead: one packet of at most 64 bytes. The
 * receive thread takes the next packet off the pseudo-terminal only once the endpoint is re-armed
 * (the last packet was used up), then runs the receive "interrupt" with the USB lock held; the host
 * is held off meanwhile (flow control: nothing is lost, nothing is paced). */
#ifndef HOSTED_UART_H
#define HOSTED_UART_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Before the firmware starts (harness/device/hosted_hal.py): the pseudo-terminal's master side. */
void hosted_uart_attach(int fd);

/* The framework opens the UART: a ring of ring_bytes of which `usable` hold data (stm32duino keeps
 * one slot free), paced at `baud`. The first call starts the receive thread; later calls only change
 * the rate (the ring and its contents stay). */
void hosted_uart_begin(uint32_t baud, uint32_t ring_bytes, uint32_t usable);
void hosted_uart_set_baud(uint32_t baud);
uint32_t hosted_uart_available(void);
/* As hosted_uart_available, but an empty ring is given up to wait_us to fill: a HAL that polls
 * available() in a loop then does not keep a host core busy (the board's core would spin). */
uint32_t hosted_uart_poll_available(uint32_t wait_us);
/* Up to cap bytes held in the ring, waiting up to timeout_ms for the first. */
uint32_t hosted_uart_read(uint8_t *buf, uint32_t cap, uint32_t timeout_ms);
/* All len bytes, returning once they would have crossed the wire. */
uint32_t hosted_uart_write(const uint8_t *buf, uint32_t len);

/* USB CDC. hosted_usb_begin starts the receive thread; `isr` runs once per packet, USB lock held
 * (USBCDC::_receive_isr calling data_rx). The lock is re-entrant, as mbed-os's USBDevice::lock (a
 * counted critical section): it stands for the critical section that excludes the interrupt. */
void hosted_usb_begin(void (*isr)(void));
void hosted_usb_lock(void);
void hosted_usb_unlock(void);
/* Bytes of the received packet not yet taken, 0 while the endpoint waits for one (USBSerial::_available). */
uint32_t hosted_usb_packet_left(void);
/* Takes up to cap bytes of the packet; re-arms the endpoint once it is used up (USBCDC::receive_nb). */
uint32_t hosted_usb_receive_nb(uint8_t *buf, uint32_t cap);
/* How many packets the receive interrupt has handled; hosted_usb_wait_packet waits up to wait_us for
 * that count to pass `seen`, but only when the caller does not hold the USB lock (a HAL's idle poll,
 * so that it does not keep a host core busy). */
uint64_t hosted_usb_packets(void);
void hosted_usb_wait_packet(uint64_t seen, uint32_t wait_us);

/* Counters across one invoke (hosted_runner.c calls hosted_uart_invoke_edge as it starts and ends):
 * received bytes the framework handed the firmware while the invoke ran, and bytes it still held at
 * the end (the ring; for USB CDC the stand-in's core ring and endpoint, via `held`). */
void hosted_uart_invoke_edge(int ended);
void hosted_uart_count_delivered(uint32_t n);
void hosted_uart_set_held(uint32_t (*held)(void));
uint64_t hosted_uart_invoke_delivered(void);
uint32_t hosted_uart_invoke_held(void);

/* What the emulation saw, for harness/device/hosted_hal.py. */
uint32_t hosted_uart_baud(void);
uint64_t hosted_uart_lost_full(void);       /* bytes that found the ring full */
uint64_t hosted_uart_lost_wrong_rate(void); /* bytes sent while the two ends' rates differed */
uint64_t hosted_uart_monotonic_ns(void);

#ifdef __cplusplus
}
#endif

#endif
