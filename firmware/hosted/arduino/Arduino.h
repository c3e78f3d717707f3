// Stand-in for the Arduino core API the harness HAL uses (firmware/boards/arduino_cortex_m), built
// for the host: `Serial`, millis(), SystemCoreClock, setup()/loop(). Not the Arduino core: only the
// calls the HAL makes, with the behaviour it relies on (see firmware/hosted/README.md).
//
// Two flavours, chosen as the real variants choose them:
// - stm32duino (default): `Serial` is HardwareSerial on a USART, received by interrupt into a ring of
//   SERIAL_RX_BUFFER_SIZE bytes that keeps one slot free; begin() sets the baud rate, flush() waits
//   until the last byte has left.
// - Arduino mbed with SERIAL_CDC defined (Nano 33 BLE): `Serial` forwards to _SerialUSB, the USB CDC
//   port (USB/PluggableUSBSerial.h): begin() does nothing (the core's main() began _SerialUSB), the
//   core buffers a 64-byte packet and 256 bytes and holds the host off (USB flow control) beyond that.
#ifndef HOSTED_ARDUINO_H
#define HOSTED_ARDUINO_H

#include <stddef.h>
#include <stdint.h>

#if !defined(SERIAL_CDC) && !defined(SERIAL_RX_BUFFER_SIZE)
#define SERIAL_RX_BUFFER_SIZE 64  // stm32duino's default
#endif

extern "C" uint32_t SystemCoreClock;
extern "C" uint32_t millis(void);

class HardwareSerial {
 public:
  void begin(unsigned long baud);
  void end() {}
  int available(void);
  int read(void);
  size_t write(uint8_t c) { return write(&c, 1); }
  size_t write(const uint8_t *buffer, size_t size);
  void flush();
  operator bool() { return true; }  // USB CDC: the host holds the port open
};

extern HardwareSerial Serial;

void setup(void);
void loop(void);

#endif
