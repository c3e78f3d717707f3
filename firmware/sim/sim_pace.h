/* UART pacing on a POSIX descriptor: bytes cross no faster than a UART at a baud rate carries them
 * (10 bits a byte, each direction on its own). Shared by the virtual board (sim_board.c) and the
 * hosted framework stand-ins (firmware/hosted/), which emulate a board's UART on a pseudo-terminal. */
#ifndef SIM_PACE_H
#define SIM_PACE_H

#include <errno.h>
#include <stdint.h>
#include <time.h>

#define SIM_NS_PER_MS 1000000u

/* Bytes read within this long of the wire going idle were waiting: they follow back to back
 * (otherwise the pacing loop's own overhead would count as idle line time). */
#define SIM_BACK_TO_BACK_NS 500000u

static inline uint64_t sim_monotonic_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void sim_sleep_until(uint64_t t_ns) {
  struct timespec ts = {(time_t)(t_ns / 1000000000u), (long)(t_ns % 1000000000u)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
  }
}

/* One byte's time on the wire at `baud` (8N1: 10 bits), 0 for an unpaced link. */
static inline uint64_t sim_byte_time_ns(uint32_t baud) { return baud ? 10000000000ull / baud : 0; }

/* Bytes a link paced at byte_ns moves in about a millisecond (at most cap): the pacing step. */
static inline uint32_t sim_pacing_step(uint64_t byte_ns, uint32_t cap) {
  if (!byte_ns) return cap;
  uint64_t step = SIM_NS_PER_MS / byte_ns;
  if (step < 1) step = 1;
  return step < cap ? (uint32_t)step : cap;
}

/* The wire is busy from when it is free (or now, if it has been idle) for n bytes; wait until
 * they have crossed it. */
static inline void sim_pace(uint64_t byte_ns, uint64_t *free_ns, uint32_t n) {
  if (!byte_ns) return;
  uint64_t t = sim_monotonic_ns();
  uint64_t start = *free_ns + SIM_BACK_TO_BACK_NS > t ? *free_ns : t;
  *free_ns = start + (uint64_t)n * byte_ns;
  sim_sleep_until(*free_ns);
}

#endif
