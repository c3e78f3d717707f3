// Stand-in for the DWT cycle counter (firmware/boards/arduino_cortex_m/cycle_counter.h): the host's
// monotonic clock at SystemCoreClock ticks a second, counting from start(), 32 bits wide.
#ifndef HOSTED_CYCLE_COUNTER_H
#define HOSTED_CYCLE_COUNTER_H

#include <stdint.h>

#include "hosted_uart.h"

extern "C" uint32_t SystemCoreClock;

namespace cycle_counter {

extern uint64_t started_ns;

inline void start() { started_ns = hosted_uart_monotonic_ns(); }

inline uint32_t read() {
  uint64_t ns = hosted_uart_monotonic_ns() - started_ns;
  return static_cast<uint32_t>(ns / 1000u * (SystemCoreClock / 1000000u) + ns % 1000u * (SystemCoreClock / 1000000u) / 1000u);
}

}  // namespace cycle_counter

#endif
