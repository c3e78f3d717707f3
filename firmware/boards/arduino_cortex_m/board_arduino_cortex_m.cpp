// Board glue for Arduino cores on Cortex-M (stm32duino on the NUCLEO-H743, Arduino mbed on the
// Nano 33 BLE): `Serial` as the link, the DWT cycle counter as ticks (kind CPU_CYCLES) extended to
// 64 bits against millis(), the core clock read at run time (SystemCoreClock).
//
// The link keeps receiving while the model runs: stm32duino's HardwareSerial fills its ring
// (SERIAL_RX_BUFFER_SIZE) from the USART's receive interrupt. On Arduino mbed the core's USBSerial
// holds only 256 bytes and a 64-byte packet before USB flow control holds the host off, so this file
// keeps a ring of its own of HP_LINK_RX_BUFFER_BYTES, filled from the CDC receive interrupt through
// a callback attached to the core's USBSerial (_SerialUSB.attach). SET_BAUD works on a UART (stm32duino):
// flush() waits until the answer has left, begin() sets the new rate. USB CDC has no baud rate:
// HELLO says so (HP_LINK_NO_BAUD) and SET_BAUD is refused. docs/hal_link.md has the details.
#include <Arduino.h>

extern "C" {
#include "board.h"
#include "harness_build_config.h"
#include "tick_extend.h"
}

#include "cycle_counter.h"

#if defined(SERIAL_CDC)  // Arduino mbed: `Serial` forwards to _SerialUSB, the core's USBSerial
#include <USB/PluggableUSBSerial.h>

#include <atomic>
#endif

// `Serial` is USB CDC on Arduino mbed boards with native USB (the variant defines SERIAL_CDC) and on
// stm32duino builds that route it to USB; otherwise it is a UART.
#if defined(SERIAL_CDC) || (defined(USBCON) && defined(USBD_USE_CDC) && !defined(DISABLE_GENERIC_SERIALUSB))
#define HARNESS_LINK_USB_CDC 1
#else
#define HARNESS_LINK_USB_CDC 0
#endif

// The highest rate SET_BAUD accepts on a UART link: what the ST-LINK VCP and the usual USB-serial
// bridges carry (the USART itself goes higher). The host asks for a rate with --switch-baud.
#ifndef HP_LINK_MAX_BAUD
#define HP_LINK_MAX_BAUD 2000000u
#endif

namespace {

constexpr uint32_t kWriteChunk = 64;  // the mbed core's USB CDC has failed on larger writes

// What the link holds while the core does not read: the board file's figure, but never more than
// stm32duino's ring, which keeps one slot free.
#if defined(SERIAL_RX_BUFFER_SIZE) && !HARNESS_LINK_USB_CDC
constexpr uint32_t kRxBuffer =
    HP_LINK_RX_BUFFER_BYTES < SERIAL_RX_BUFFER_SIZE - 1u ? HP_LINK_RX_BUFFER_BYTES : SERIAL_RX_BUFFER_SIZE - 1u;
#else
constexpr uint32_t kRxBuffer = HP_LINK_RX_BUFFER_BYTES;
#endif

uint32_t counter_started_ms;  // millis() when the cycle counter started from 0

uint64_t cycles(void *) {
  uint32_t exact = cycle_counter::read();
  // Counted from the counter's start, so the two agree however long `while (!Serial)` waited.
  uint64_t approximate = static_cast<uint64_t>(millis() - counter_started_ms) * (SystemCoreClock / 1000u);
  return extend_ticks(exact, approximate);
}

#if defined(SERIAL_CDC)
// Arduino mbed's USB CDC. The core's USBSerial moves each 64-byte packet into its 256-byte ring
// (RingBufferN<256>) in the receive interrupt and in available()/read(); the endpoint is re-armed for
// the next packet only once the last one is used up, so while the model runs the host is held off
// after about 320 bytes. Here every packet also runs usb_received() (USBCDC::_receive_isr -> data_rx
// -> the callbacks attached), which moves what the core holds into this ring while it has room; the
// rest stays in the core (flow control) and link_read drains it from thread context.
//
// One producer at a time: the interrupt, or the main thread under the USB lock (USBCDC::lock(), a
// counted critical section in mbed-os's USBDevice, so available()/read() may take it again inside),
// which excludes the interrupt on this single core. One consumer: the main thread. The indices are
// atomics (acquire/release: the stores of a byte are ordered before its index is published).
constexpr uint32_t kSlots = kRxBuffer + 1;  // one slot kept free: head == tail means empty
uint8_t rx_ring[kSlots];
std::atomic<uint32_t> rx_head{0};  // next slot to fill; written by the producer only
std::atomic<uint32_t> rx_tail{0};  // next slot to read; written by the consumer only

inline uint32_t next_slot(uint32_t i) { return i + 1 == kSlots ? 0 : i + 1; }

// The producer: USB lock held (in the interrupt, or taken by drain_core).
void fill_ring() {
  uint32_t head = rx_head.load(std::memory_order_relaxed);
  uint32_t tail = rx_tail.load(std::memory_order_acquire);
  while (next_slot(head) != tail) {
    int held = _SerialUSB.available();  // also moves the endpoint's packet into the core's ring
    if (held <= 0) break;
    for (; held > 0 && next_slot(head) != tail; held--) {
      rx_ring[head] = static_cast<uint8_t>(_SerialUSB.read());
      head = next_slot(head);
    }
  }
  rx_head.store(head, std::memory_order_release);
}

// Attached to _SerialUSB: runs in the USB interrupt with the USB lock held, after the core's own
// callback has moved the new packet into its ring.
void usb_received() { fill_ring(); }

// Thread context: what the interrupt left in the core while this ring was full (it runs only when a
// packet arrives, and none arrives while the core holds one).
void drain_core() {
  _SerialUSB.USBCDC::lock();  // qualified: mbed::Stream, another base of USBSerial, has a lock() too
  fill_ring();
  _SerialUSB.USBCDC::unlock();
}

uint32_t pop_ring(uint8_t *buf, uint32_t cap) {
  uint32_t tail = rx_tail.load(std::memory_order_relaxed);
  uint32_t head = rx_head.load(std::memory_order_acquire);
  uint32_t n = 0;
  for (; n < cap && tail != head; n++) {
    buf[n] = rx_ring[tail];
    tail = next_slot(tail);
  }
  rx_tail.store(tail, std::memory_order_release);
  return n;
}

int32_t link_read(void *, uint8_t *buf, uint32_t cap, uint32_t timeout_ms) {
  uint32_t started = millis();
  for (;;) {
    drain_core();
    uint32_t n = pop_ring(buf, cap);
    if (n > 0 || millis() - started >= timeout_ms) return static_cast<int32_t>(n);
    while (rx_head.load(std::memory_order_acquire) == rx_tail.load(std::memory_order_relaxed) &&
           Serial.available() == 0 && millis() - started < timeout_ms) {
      // nothing yet: the next packet's interrupt fills the ring
    }
  }
}
#else
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
#endif

int32_t link_write(void *, const uint8_t *buf, uint32_t len) {
  uint32_t chunk = len < kWriteChunk ? len : kWriteChunk;
  return static_cast<int32_t>(Serial.write(buf, chunk));
}

#if !HARNESS_LINK_USB_CDC
uint32_t link_baud = HP_LINK_BAUD;

// Called by the core after the SET_BAUD answer was written: flush() returns once the transmit ring is
// empty and the USART has sent the last byte (stm32duino moves the ring's tail on transfer complete);
// begin() runs uart_init again at the new rate and re-arms the receive interrupt. The receive ring is
// kept (only end() clears it).
uint32_t link_set_baud(void *, uint32_t baud) {
  uint32_t before = link_baud;
  Serial.flush();
  Serial.begin(baud);
  link_baud = baud;
  return before;
}
#endif

#if HARNESS_LINK_USB_CDC
hp_hal hal = {nullptr, link_read, link_write, cycles, 0, HP_TICKS_CPU_CYCLES, 0, kRxBuffer,
              nullptr, 0, HP_LINK_NO_BAUD};
#else
hp_hal hal = {nullptr, link_read, link_write, cycles, 0, HP_TICKS_CPU_CYCLES, 0, kRxBuffer,
              link_set_baud, HP_LINK_MAX_BAUD, 0};
#endif

}  // namespace

extern "C" void board_init(void) {
#if defined(HP_EEMBC_ENERGY_MODE) && HP_EEMBC_ENERGY_MODE
  pinMode(HP_EEMBC_TIMESTAMP_PIN, OUTPUT);  // EEMBC energy mode: the timestamp pin, held high until a pulse
  digitalWrite(HP_EEMBC_TIMESTAMP_PIN, HIGH);
#endif
  Serial.begin(HP_LINK_BAUD);
  while (!Serial) {
    // USB CDC (Nano 33 BLE) is ready once the host opens the port and raises DTR.
  }
#if defined(SERIAL_CDC)
  _SerialUSB.attach(usb_received);  // the core's main() has begun _SerialUSB (its own callback first)
#endif
  cycle_counter::start();
  counter_started_ms = millis();
  hal.tick_hz = SystemCoreClock;
  hal.cpu_hz = SystemCoreClock;
}

extern "C" const hp_hal *board_hal(void) { return &hal; }

#if defined(HP_EEMBC_ENERGY_MODE) && HP_EEMBC_ENERGY_MODE
// th_timestamp in the reference's energy mode: pull the pin low, hold it at least 1 us, release it; the
// runner's IO manager counts the falling edge.
extern "C" void board_timestamp_pulse(void *) {
  digitalWrite(HP_EEMBC_TIMESTAMP_PIN, LOW);
  delayMicroseconds(2);
  digitalWrite(HP_EEMBC_TIMESTAMP_PIN, HIGH);
}
#endif

extern "C" void board_debug_write(const char *, unsigned) {}  // one serial port: it carries the protocol

void setup() { harness_firmware_run(); }

void loop() {}
