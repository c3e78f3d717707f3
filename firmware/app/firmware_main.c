/* The firmware's body on every board: the protocol core over the board's link. Bare-metal builds
 * call it from main() (bare_main.c); Arduino from setup(), ESP-IDF from app_main(). */
#include "board.h"
#include "harness_build_config.h"
#include "hp_stream.h"
#include "runner.h"

static uint8_t rx_frame[HP_RX_FRAME_BYTES] __attribute__((aligned(4)));
static uint8_t tx_frame[HP_TX_FRAME_BYTES] __attribute__((aligned(4)));
static hp_device device;
#if HP_HAS_FRONTEND
static hp_stream stream; /* keyword streaming state: only in firmware with an audio frontend */
#define HARNESS_STREAM (&stream)
#else
#define HARNESS_STREAM 0
#endif

void harness_firmware_run(void) {
  board_init();
  const hp_device_config config = {
      board_hal(), model_runner(),   HP_BOARD_ID, HP_BUILD_ID,       rx_frame,
      sizeof rx_frame, tx_frame, sizeof tx_frame, frontend_runner(), HARNESS_STREAM,
  };
  if (hp_device_init(&device, &config) != 0) {
    static const char message[] = "harness: frame buffers below the protocol minimum\n";
    board_debug_write(message, sizeof message - 1);
    for (;;) {
    }
  }
  hp_device_run(&device);
  for (;;) {
  }
}
