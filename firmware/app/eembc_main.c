/* The firmware's body in an MLPerf Tiny / EEMBC DUT build (`harness firmware build --protocol eembc`):
 * firmware/eembc/ee_dut.c, the same DUT the virtual board serves, over the board's link with the model
 * runner, in place of firmware_main.c. Bare-metal builds call it from main() (bare_main.c), Arduino from
 * setup(), ESP-IDF from app_main(). */
#include "board.h"
#include "ee_dut.h"
#include "harness_build_config.h"
#include "runner.h"

static uint8_t buffer[HP_EEMBC_BUFFER_BYTES] __attribute__((aligned(4))); /* MAX_DB_INPUT_SIZE upstream */
static ee_dut dut;

void harness_firmware_run(void) {
  board_init();
  const ee_dut_config config = {
      board_hal(),          model_runner(),        HP_BOARD_ID,          HP_EEMBC_MODEL,
      buffer,               sizeof buffer,         HP_EEMBC_COMPUTATION, HP_EEMBC_UINT8_INPUT,
#if HP_EEMBC_ENERGY_MODE
      board_timestamp_pulse,
#else
      0,
#endif
  };
  ee_dut_init(&dut, &config);
  for (;;) ee_dut_poll(&dut, 100);
}
