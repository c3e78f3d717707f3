// Stand-in for the Arduino core API the harness HAL uses (firmware/boards/arduino_cortex_m), built
// for the host: `Serial`, millis(), SystemCoreClock, setup()/loop(), and for EEMBC energy mode's
// timestamp pin pinMode(), digitalWrite() and delayMicroseconds() on the header pins D0-D15 and A0-A5
// (each transition is recorded, see arduino_stub.cpp). Not the Arduino core: only the
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

// Pins as the variants number them (stm32duino's D0..D15, then A0..A5); only recorded, driving nothing.
enum : uint32_t { D0, D1, D2, D3, D4, D5, D6, D7, D8, D9, D10, D11, D12, D13, D14, D15, A0, A1, A2, A3, A4, A5 };
#define LOW 0x0
#define HIGH 0x1
#define INPUT 0x0
#define OUTPUT 0x1

void pinMode(uint32_t pin, uint32_t mode);
void digitalWrite(uint32_t pin, uint32_t value);
void delayMicroseconds(uint32_t us);

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
