// Board glue for Arduino cores on Cortex-M (stm32duino on the NUCLEO-H743, Arduino mbed on the
// Nano 33 BLE): `Serial` as the link, the DWT cycle counter as ticks (kind CPU_CYCLES) extended to
// 64 bits against millis(), the core clock read at run time (SystemCoreClock).
#include <Arduino.h>

extern "C" {
#include "board.h"
#include "harness_build_config.h"
#include "tick_extend.h"
}

namespace {

// Architectural addresses: portable across the CMSIS versions the two cores ship.
volatile uint32_t &DEMCR = *reinterpret_cast<volatile uint32_t *>(0xE000EDFCu);
volatile uint32_t &DWT_CTRL = *reinterpret_cast<volatile uint32_t *>(0xE0001000u);
volatile uint32_t &DWT_CYCCNT = *reinterpret_cast<volatile uint32_t *>(0xE0001004u);
volatile uint32_t &DWT_LAR = *reinterpret_cast<volatile uint32_t *>(0xE0001FB0u);
constexpr uint32_t kTraceEnable = 1u << 24;
constexpr uint32_t kCycleCounterEnable = 1u;
constexpr uint32_t kWriteChunk = 64;  // the mbed core's USB CDC has failed on larger writes

uint64_t cycles(void *) {
  uint32_t exact = DWT_CYCCNT;
  uint64_t approximate = static_cast<uint64_t>(millis()) * (SystemCoreClock / 1000u);
  return extend_ticks(exact, approximate);
}

int32_t link_read(void *, uint8_t *buf, uint32_t cap, uint32_t timeout_ms) {
  uint32_t started = millis();
  uint32_t n = 0;
  while (n < cap) {
    if (Serial.available() > 0) {
      buf[n++] = static_cast<uint8_t>(Serial.read());
    } else if (n > 0 || millis() - started >= timeout_ms) {
      break;
    }
  }
  return static_cast<int32_t>(n);
}

int32_t link_write(void *, const uint8_t *buf, uint32_t len) {
  uint32_t chunk = len < kWriteChunk ? len : kWriteChunk;
  return static_cast<int32_t>(Serial.write(buf, chunk));
}

hp_hal hal = {nullptr, link_read, link_write, cycles, 0, HP_TICKS_CPU_CYCLES, 0, HP_LINK_RX_BUFFER_BYTES};

}  // namespace

extern "C" void board_init(void) {
  Serial.begin(HP_LINK_BAUD);
  while (!Serial) {
    // USB CDC (Nano 33 BLE) is ready once the host opens the port and raises DTR.
  }
  DEMCR |= kTraceEnable;
  DWT_LAR = 0xC5ACCE55u;  // unlocks the DWT on the Cortex-M7; ignored on the Cortex-M4
  DWT_CYCCNT = 0;
  DWT_CTRL |= kCycleCounterEnable;
  hal.tick_hz = SystemCoreClock;
  hal.cpu_hz = SystemCoreClock;
}

extern "C" const hp_hal *board_hal(void) { return &hal; }

extern "C" void board_debug_write(const char *, unsigned) {}  // one serial port: it carries the protocol

void setup() { harness_firmware_run(); }

void loop() {}
