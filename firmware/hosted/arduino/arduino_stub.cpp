// The stand-in Arduino core's few calls (Arduino.h, USB/PluggableUSBSerial.h), on the emulated link
// (hosted_uart.h).
#include <Arduino.h>
#include <stdio.h>
#include <stdlib.h>

#include "hosted_cycle_counter.h"
#include "hosted_uart.h"

#if defined(SERIAL_CDC)
#include <USB/PluggableUSBSerial.h>
#endif

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
constexpr uint32_t kIdleWaitUs = 200;  // see hosted_uart_poll_available
}  // namespace

HardwareSerial Serial;

// Pins: each pinMode() and digitalWrite() is a line `<ns> <pin> <OUTPUT|INPUT|HIGH|LOW>`, each
// delayMicroseconds() one `<ns> delay <us>` (host monotonic nanoseconds), appended to the file
// $HARNESS_HOSTED_PIN_LOG names; without it, nothing is recorded.
namespace {
const char *const kPinNames[] = {"D0",  "D1",  "D2",  "D3",  "D4", "D5", "D6", "D7", "D8", "D9", "D10",
                                 "D11", "D12", "D13", "D14", "D15", "A0", "A1", "A2", "A3", "A4", "A5"};

void record(const char *name, const char *what) {
  static FILE *log = nullptr;
  static bool opened = false;
  if (!opened) {
    opened = true;
    const char *path = getenv("HARNESS_HOSTED_PIN_LOG");
    if (path && *path) log = fopen(path, "a");
  }
  if (!log) return;
  fprintf(log, "%llu %s %s\n", static_cast<unsigned long long>(hosted_uart_monotonic_ns()), name, what);
  fflush(log);
}

void record_pin(uint32_t pin, const char *what) {
  record(pin < sizeof kPinNames / sizeof *kPinNames ? kPinNames[pin] : "?", what);
}
}  // namespace

void pinMode(uint32_t pin, uint32_t mode) { record_pin(pin, mode == OUTPUT ? "OUTPUT" : "INPUT"); }

void digitalWrite(uint32_t pin, uint32_t value) { record_pin(pin, value ? "HIGH" : "LOW"); }

void delayMicroseconds(uint32_t us) {  // a busy wait, as the cores' (DWT cycles, or a timer)
  char text[16];
  snprintf(text, sizeof text, "%lu", static_cast<unsigned long>(us));
  record("delay", text);
  uint64_t until = hosted_uart_monotonic_ns() + static_cast<uint64_t>(us) * 1000u;
  while (hosted_uart_monotonic_ns() < until) {
  }
}

extern "C" uint32_t millis(void) { return static_cast<uint32_t>((hosted_uart_monotonic_ns() - boot_ns) / 1000000u); }

size_t HardwareSerial::write(const uint8_t *buffer, size_t size) {
  return hosted_uart_write(buffer, static_cast<uint32_t>(size));
}

void HardwareSerial::flush() {}  // writes return once their bytes have crossed the wire

#if defined(SERIAL_CDC)
// Arduino mbed: `Serial` forwards to _SerialUSB.

arduino::USBSerial _SerialUSB;

void HardwareSerial::begin(unsigned long) {}  // the core's UART::begin returns at once for USB

int HardwareSerial::available(void) {
  uint64_t seen = hosted_usb_packets();
  int n = _SerialUSB.available();
  if (n == 0) {  // a HAL polling in a loop: give the next packet a moment instead of spinning
    hosted_usb_wait_packet(seen, kIdleWaitUs);
    n = _SerialUSB.available();
  }
  return n;
}

int HardwareSerial::read(void) { return _SerialUSB.read(); }

namespace arduino {

void USBSerial::begin(unsigned long) {
  attach(on_packet);  // as the core's begin(): its own callback comes first
  hosted_uart_set_held([]() { return _SerialUSB.held(); });
  hosted_usb_begin([]() { _SerialUSB.data_rx(); });
  on_interrupt();
}

void USBCDC::lock() { hosted_usb_lock(); }

void USBCDC::unlock() { hosted_usb_unlock(); }

void USBSerial::attach(void (*fptr)(void)) {
  USBCDC::lock();
  if (fptr && callbacks_ < MAX_CALLBACKS_ON_IRQ) rx_[callbacks_++] = fptr;
  USBCDC::unlock();
}

int USBSerial::available(void) {
  USBCDC::lock();
  on_interrupt();
  int n = static_cast<int>(count_);
  USBCDC::unlock();
  return n;
}

int USBSerial::read(void) {
  USBCDC::lock();
  on_interrupt();
  int c = -1;
  if (count_) {
    c = ring_[tail_];
    tail_ = (tail_ + 1) % sizeof ring_;
    count_--;
    hosted_uart_count_delivered(1);
  }
  USBCDC::unlock();
  return c;
}

void USBSerial::data_rx() {  // USB lock held by the receive thread
  for (size_t i = 0; i < callbacks_; i++) rx_[i]();
}

uint32_t USBSerial::held() {
  USBCDC::lock();
  uint32_t n = count_ + hosted_usb_packet_left();
  USBCDC::unlock();
  return n;
}

void USBSerial::on_packet() { _SerialUSB.on_interrupt(); }

// The packet's bytes that fit into the ring; the endpoint re-arms once the packet is used up.
void USBSerial::on_interrupt() {
  uint8_t buf[64];
  uint32_t room = sizeof ring_ - count_;
  uint32_t want = hosted_usb_packet_left();
  uint32_t got = hosted_usb_receive_nb(buf, want < room ? want : room);
  for (uint32_t i = 0; i < got; i++) {
    ring_[head_] = buf[i];
    head_ = (head_ + 1) % sizeof ring_;
    count_++;
  }
}

}  // namespace arduino

#else
// stm32duino: HardwareSerial on a USART, a ring of SERIAL_RX_BUFFER_SIZE that keeps one slot free.

void HardwareSerial::begin(unsigned long baud) {
  hosted_uart_begin(static_cast<uint32_t>(baud), SERIAL_RX_BUFFER_SIZE, SERIAL_RX_BUFFER_SIZE - 1);
}

int HardwareSerial::available(void) { return static_cast<int>(hosted_uart_poll_available(kIdleWaitUs)); }

int HardwareSerial::read(void) {
  uint8_t c;
  return hosted_uart_read(&c, 1, 0) ? c : -1;
}
#endif

// The framework's main(): setup(), then loop() for ever (Arduino mbed's main() begins _SerialUSB
// first). harness/device/hosted_hal.py calls it on a thread of its own once the link and the runner
// are in place.
extern "C" void hosted_main(void) {
  boot_ns = hosted_uart_monotonic_ns();
#if defined(SERIAL_CDC)
  _SerialUSB.begin(115200);
#endif
  setup();
  for (;;) loop();
}
