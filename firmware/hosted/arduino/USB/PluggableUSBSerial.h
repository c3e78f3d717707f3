// Stand-in for Arduino mbed's USBSerial (cores/arduino/USB/PluggableUSBSerial.h), the object behind
// `Serial` on boards with SERIAL_CDC: only the calls firmware/boards/arduino_cortex_m makes, with the
// behaviour they rely on (firmware/hosted/README.md). Our own minimal code, not the core's.
//
// - A 256-byte ring (the core's RingBufferN<256>), filled from the endpoint's packet by
//   on_interrupt(): in available() and read(), and in the receive interrupt through the callback the
//   core's begin() attaches first. The packet's endpoint is re-armed once the packet is used up.
// - attach(void (*)()): one more callback the receive interrupt runs after a packet arrived (data_rx),
//   USB lock held; the table holds MAX_CALLBACKS_ON_IRQ and a callback beyond it is dropped silently.
// - USBCDC::lock()/unlock(): the USB lock, re-entrant; available() and read() take it themselves. As
//   in the core, mbed::Stream (another base) has a protected lock() too, so an unqualified
//   _SerialUSB.lock() does not compile.
#ifndef HOSTED_PLUGGABLE_USB_SERIAL_H
#define HOSTED_PLUGGABLE_USB_SERIAL_H

#include <stddef.h>
#include <stdint.h>

#ifndef MAX_CALLBACKS_ON_IRQ
#define MAX_CALLBACKS_ON_IRQ 4  // the core's table; tests set 1 (the core's own) to drop the HAL's
#endif

namespace mbed {
class Stream {
 protected:
  virtual ~Stream() = default;
  virtual void lock() {}
  virtual void unlock() {}
};
}  // namespace mbed

namespace arduino {

class USBCDC {
 public:
  void lock();
  void unlock();
};

class USBSerial : public USBCDC, public mbed::Stream {
 public:
  void begin(unsigned long baud);
  void attach(void (*fptr)(void));
  int available(void);
  int read(void);

  // Stand-in only: data_rx (the receive interrupt's callbacks), and what the core holds (ring and packet).
  void data_rx();
  uint32_t held();

 private:
  static void on_packet();  // the core's own callback: on_interrupt()
  void on_interrupt();

  uint8_t ring_[256];
  uint32_t head_ = 0, tail_ = 0, count_ = 0;
  void (*rx_[MAX_CALLBACKS_ON_IRQ])(void) = {};
  size_t callbacks_ = 0;
};

}  // namespace arduino

extern arduino::USBSerial _SerialUSB;

#endif
