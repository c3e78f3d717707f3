/* The emulated UART of the framework stand-ins: see hosted_uart.h. */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* the termios B* constants above 38400 */

#include "hosted_uart.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <termios.h>
#include <unistd.h>

#include "sim_pace.h"

static struct {
  int fd;
  int started;
  int usb_cdc;
  uint8_t *ring;
  uint32_t size;   /* slots in the ring */
  uint32_t usable; /* bytes it holds at most */
  uint32_t head, tail, count;
  uint32_t baud;
  uint64_t byte_ns;    /* one byte's time on the wire, 0 for USB CDC */
  uint64_t rx_free_ns; /* when the last byte received finished arriving */
  uint64_t tx_free_ns; /* when the last byte written finishes leaving */
  uint64_t lost_full, lost_wrong_rate;
  pthread_mutex_t lock;
  pthread_cond_t changed; /* bytes stored, or room made */
  pthread_t thread;
} uart = {.fd = -1, .lock = PTHREAD_MUTEX_INITIALIZER};

uint64_t hosted_uart_monotonic_ns(void) { return sim_monotonic_ns(); }

static const struct {
  speed_t code;
  uint32_t baud;
} RATES[] = {{B9600, 9600},       {B19200, 19200},     {B38400, 38400},     {B57600, 57600},
             {B115200, 115200},   {B230400, 230400},   {B460800, 460800},   {B500000, 500000},
             {B576000, 576000},   {B921600, 921600},   {B1000000, 1000000}, {B1152000, 1152000},
             {B1500000, 1500000}, {B2000000, 2000000}, {B2500000, 2500000}, {B3000000, 3000000},
             {B3500000, 3500000}, {B4000000, 4000000}};

/* The rate the host's end of the pseudo-terminal is set to, 0 if it names none we know. */
static uint32_t host_rate(void) {
  struct termios t;
  if (tcgetattr(uart.fd, &t) != 0) return 0;
  speed_t code = cfgetospeed(&t);
  for (size_t i = 0; i < sizeof RATES / sizeof RATES[0]; i++)
    if (RATES[i].code == code) return RATES[i].baud;
  return 0;
}

static int rates_differ(void) {
  if (uart.usb_cdc) return 0;
  uint32_t host = host_rate();
  return host && host != uart.baud;
}

/* The receive interrupt: bytes at the line rate into the ring, or lost. */
static void *receive(void *arg) {
  (void)arg;
  uint8_t chunk[4096];
  for (;;) {
    uint32_t want = sizeof chunk;
    if (uart.usb_cdc) { /* flow control: take only what the ring has room for */
      pthread_mutex_lock(&uart.lock);
      while (uart.count == uart.usable) pthread_cond_wait(&uart.changed, &uart.lock);
      want = uart.usable - uart.count < want ? uart.usable - uart.count : want;
      pthread_mutex_unlock(&uart.lock);
    }
    struct pollfd pfd = {uart.fd, POLLIN, 0};
    int ready = poll(&pfd, 1, 100);
    if (ready <= 0 || !(pfd.revents & POLLIN)) {
      if (ready > 0) usleep(10000); /* no one holds the other end: wait for the host */
      continue;
    }
    ssize_t n = read(uart.fd, chunk, sim_pacing_step(uart.byte_ns, want));
    if (n <= 0) {
      if (n < 0 && errno != EINTR && errno != EAGAIN) usleep(10000);
      continue;
    }
    sim_pace(uart.byte_ns, &uart.rx_free_ns, (uint32_t)n);
    pthread_mutex_lock(&uart.lock);
    if (rates_differ()) {
      uart.lost_wrong_rate += (uint64_t)n;
    } else {
      for (ssize_t i = 0; i < n; i++) {
        if (uart.count == uart.usable) {
          uart.lost_full++;
          continue;
        }
        uart.ring[uart.head] = chunk[i];
        uart.head = (uart.head + 1) % uart.size;
        uart.count++;
      }
      pthread_cond_broadcast(&uart.changed);
    }
    pthread_mutex_unlock(&uart.lock);
  }
  return NULL;
}

void hosted_uart_attach(int fd) {
  pthread_condattr_t attr; /* timed waits on the monotonic clock, like sim_pace */
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&uart.changed, &attr);
  pthread_condattr_destroy(&attr);
  uart.fd = fd;
}

void hosted_uart_set_baud(uint32_t baud) {
  pthread_mutex_lock(&uart.lock);
  uart.baud = baud;
  uart.byte_ns = uart.usb_cdc ? 0 : sim_byte_time_ns(baud);
  pthread_mutex_unlock(&uart.lock);
}

void hosted_uart_begin(uint32_t baud, uint32_t ring_bytes, uint32_t usable, int usb_cdc) {
  if (!uart.started) {
    uart.size = ring_bytes ? ring_bytes : 1;
    uart.usable = usable < uart.size ? usable : uart.size;
    uart.ring = calloc(uart.size, 1);
    uart.usb_cdc = usb_cdc;
  }
  hosted_uart_set_baud(baud);
  if (!uart.started && uart.ring && uart.fd >= 0) {
    uart.started = pthread_create(&uart.thread, NULL, receive, NULL) == 0;
  }
}

uint32_t hosted_uart_available(void) {
  pthread_mutex_lock(&uart.lock);
  uint32_t n = uart.count;
  pthread_mutex_unlock(&uart.lock);
  return n;
}

uint32_t hosted_uart_poll_available(uint32_t wait_us) {
  uint64_t deadline = sim_monotonic_ns() + (uint64_t)wait_us * 1000u;
  struct timespec until = {(time_t)(deadline / 1000000000u), (long)(deadline % 1000000000u)};
  pthread_mutex_lock(&uart.lock);
  if (uart.count == 0 && wait_us) pthread_cond_timedwait(&uart.changed, &uart.lock, &until);
  uint32_t n = uart.count;
  pthread_mutex_unlock(&uart.lock);
  return n;
}

uint32_t hosted_uart_read(uint8_t *buf, uint32_t cap, uint32_t timeout_ms) {
  uint64_t deadline = sim_monotonic_ns() + (uint64_t)timeout_ms * SIM_NS_PER_MS;
  struct timespec until = {(time_t)(deadline / 1000000000u), (long)(deadline % 1000000000u)};
  pthread_mutex_lock(&uart.lock);
  while (uart.count == 0 && timeout_ms) {
    if (pthread_cond_timedwait(&uart.changed, &uart.lock, &until) == ETIMEDOUT) break;
  }
  uint32_t n = 0;
  while (n < cap && uart.count) {
    buf[n++] = uart.ring[uart.tail];
    uart.tail = (uart.tail + 1) % uart.size;
    uart.count--;
  }
  if (n) pthread_cond_broadcast(&uart.changed);
  pthread_mutex_unlock(&uart.lock);
  return n;
}

uint32_t hosted_uart_write(const uint8_t *buf, uint32_t len) {
  uint32_t done = 0;
  while (done < len) {
    uint32_t step = sim_pacing_step(uart.byte_ns, len - done);
    sim_pace(uart.byte_ns, &uart.tx_free_ns, step); /* the bytes reach the host once they have crossed */
    if (rates_differ()) {                           /* the host's UART would see garbage */
      pthread_mutex_lock(&uart.lock);
      uart.lost_wrong_rate += step;
      pthread_mutex_unlock(&uart.lock);
      done += step;
      continue;
    }
    ssize_t n = write(uart.fd, buf + done, step);
    if (n > 0) {
      done += (uint32_t)n;
    } else if (n < 0 && errno != EINTR && errno != EAGAIN) {
      usleep(10000); /* no one holds the other end */
      return done;
    }
  }
  return done;
}

uint32_t hosted_uart_baud(void) { return uart.baud; }

uint64_t hosted_uart_lost_full(void) {
  pthread_mutex_lock(&uart.lock);
  uint64_t n = uart.lost_full;
  pthread_mutex_unlock(&uart.lock);
  return n;
}

uint64_t hosted_uart_lost_wrong_rate(void) {
  pthread_mutex_lock(&uart.lock);
  uint64_t n = uart.lost_wrong_rate;
  pthread_mutex_unlock(&uart.lock);
  return n;
}
