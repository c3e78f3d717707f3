/* Entry point of bare-metal builds (QEMU boards); framework builds call harness_firmware_run(). */
#include "board.h"

int main(void) {
  harness_firmware_run();
  return 0;
}
