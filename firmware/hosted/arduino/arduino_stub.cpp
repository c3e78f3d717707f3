// The stand-in Arduino core's few calls (Arduino.h), on the emulated UART (hosted_uart.h).
#include <Arduino.h>

#include "hosted_cycle_counter.h"
#include "hosted_uart.h"

#ifndef HOSTED_CPU_HZ
#define HOSTED_CPU_HZ 480000000u
#endif

extern "C" {
uint32_t SystemCoreClock = HOSTED_CPU_HZ;
}

namespace cycle_counter {
uint64_t started_ns;
}

namespace {
uint64_t boot_ns;

#if defined(SERIAL_CDC)
constexpr uint32_t kRing = 256;  // the mbed core's USBSerial: RingBufferN<256>
constexpr uint32_t kUsable = 256;
constexpr int kUsbCdc = 1;
#else
constexpr uint32_t kRing = SERIAL_RX_BUFFER_SIZE;  // stm32duino: a full ring leaves one slot free
constexpr uint32_t kUsable = SERIAL_RX_BUFFER_SIZE - 1;
constexpr int kUsbCdc = 0;
#endif
constexpr uint32_t kIdleWaitUs = 200;  // see hosted_uart_poll_available
}  // namespace

HardwareSerial Serial;

extern "C" uint32_t millis(void) { return static_cast<uint32_t>((hosted_uart_monotonic_ns() - boot_ns) / 1000000u); }

void HardwareSerial::begin(unsigned long baud) { hosted_uart_begin(static_cast<uint32_t>(baud), kRing, kUsable, kUsbCdc); }

int HardwareSerial::available(void) { return static_cast<int>(hosted_uart_poll_available(kIdleWaitUs)); }

int HardwareSerial::read(void) {
  uint8_t c;
  return hosted_uart_read(&c, 1, 0) ? c : -1;
}

size_t HardwareSerial::write(const uint8_t *buffer, size_t size) {
  return hosted_uart_write(buffer, static_cast<uint32_t>(size));
}

void HardwareSerial::flush() {}  // writes return once their bytes have crossed the wire

// The framework's main(): setup(), then loop() for ever. harness/device/hosted_hal.py calls it on a
// thread of its own once the link and the runner are in place.
extern "C" void hosted_main(void) {
  boot_ns = hosted_uart_monotonic_ns();
  setup();
  for (;;) loop();
}
