/* What a board's glue provides to the firmware's main loop. One implementation per board family
 * under firmware/boards/; the protocol core never includes this. */
#ifndef HARNESS_BOARD_H
#define HARNESS_BOARD_H

#include "hp_device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Clocks, caches, the serial port: everything before the link can be used. */
void board_init(void);

/* The link and the timer, ready to use after board_init(). */
const hp_hal *board_hal(void);

/* A line of diagnostics on a channel that is not the protocol link (may do nothing). */
void board_debug_write(const char *text, unsigned length);

/* MLPerf Tiny / EEMBC DUT builds in energy mode only (HP_EEMBC_ENERGY_MODE): one timestamp on the board's
 * timestamp pin (HP_EEMBC_TIMESTAMP_PIN), held high, pulled low for at least 1 us, released. `ctx` is the
 * link's hal context. */
void board_timestamp_pulse(void *ctx);

/* The firmware: initialise the board, serve the protocol, never return. */
void harness_firmware_run(void);

#ifdef __cplusplus
}
#endif

#endif
