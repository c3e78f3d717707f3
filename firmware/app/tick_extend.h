/* A 64-bit tick count from an exact 32-bit counter that wraps, plus a coarse 64-bit clock that says
 * roughly where we are: no interrupt needed, and reads may be arbitrarily far apart. */
#ifndef HARNESS_TICK_EXTEND_H
#define HARNESS_TICK_EXTEND_H

#include <stdint.h>

/* `exact_low` is the fine counter's value (counting up), `approximate` the same moment in fine
 * ticks from the coarse clock; they must agree to within 2^31 fine ticks. */
static inline uint64_t extend_ticks(uint32_t exact_low, uint64_t approximate) {
  uint64_t candidate = (approximate & ~(uint64_t)0xFFFFFFFFu) | exact_low;
  if (candidate + (1ull << 31) < approximate) return candidate + (1ull << 32);
  if (candidate > approximate + (1ull << 31) && candidate >= (1ull << 32)) return candidate - (1ull << 32);
  return candidate;
}

#endif
