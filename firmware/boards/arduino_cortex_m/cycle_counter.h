// The Cortex-M DWT cycle counter, at its architectural addresses (portable across the CMSIS versions
// the two cores ship). A host build of this HAL (firmware/hosted/, HARNESS_HOSTED) supplies a stand-in
// with the same two functions instead: raw addresses mean nothing on the host.
#ifndef HARNESS_CYCLE_COUNTER_H
#define HARNESS_CYCLE_COUNTER_H

#include <stdint.h>

#ifdef HARNESS_HOSTED
#include "hosted_cycle_counter.h"
#else

namespace cycle_counter {

inline volatile uint32_t &reg(uint32_t address) { return *reinterpret_cast<volatile uint32_t *>(address); }
constexpr uint32_t kDemcr = 0xE000EDFCu;
constexpr uint32_t kDwtCtrl = 0xE0001000u;
constexpr uint32_t kDwtCyccnt = 0xE0001004u;
constexpr uint32_t kDwtLar = 0xE0001FB0u;
constexpr uint32_t kTraceEnable = 1u << 24;
constexpr uint32_t kCycleCounterEnable = 1u;

// Start counting from 0.
inline void start() {
  reg(kDemcr) |= kTraceEnable;
  reg(kDwtLar) = 0xC5ACCE55u;  // unlocks the DWT on the Cortex-M7; ignored on the Cortex-M4
  reg(kDwtCyccnt) = 0;
  reg(kDwtCtrl) |= kCycleCounterEnable;
}

inline uint32_t read() { return reg(kDwtCyccnt); }

}  // namespace cycle_counter

#endif
#endif
