/* The emulated UART of the framework stand-ins: see hosted_uart.h. */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* the termios B* constants above 38400 */

#include "hosted_uart.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
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
  uint64_t delivered, delivered_at_start, invoke_delivered; /* see hosted_uart_invoke_edge */
  uint32_t invoke_held;
  uint32_t (*held)(void);
} uart = {.fd = -1, .lock = PTHREAD_MUTEX_INITIALIZER};

#define USB_PACKET 64 /* CDC_MAX_PACKET_SIZE at full speed */

static struct {
  pthread_mutex_t lock; /* recursive: the USB lock */
  int depth;            /* how often its owner holds it */
  pthread_cond_t changed; /* endpoint re-armed, or a packet handled */
  uint8_t packet[USB_PACKET];
  uint32_t pos, size;
  int armed; /* waiting for the next packet */
  uint64_t packets;
  void (*isr)(void);
  pthread_t thread;
} usb = {.armed = 1};

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

/* Waits on the pseudo-terminal until it has bytes; 0 if no one holds the other end yet. */
static int wait_readable(void) {
  struct pollfd pfd = {uart.fd, POLLIN, 0};
  int ready = poll(&pfd, 1, 100);
  if (ready <= 0 || !(pfd.revents & POLLIN)) {
    if (ready > 0) usleep(10000); /* no one holds the other end: wait for the host */
    return 0;
  }
  return 1;
}

/* The receive interrupt: bytes at the line rate into the ring, or lost. */
static void *receive(void *arg) {
  (void)arg;
  uint8_t chunk[4096];
  for (;;) {
    uint32_t want = sizeof chunk;
    if (!wait_readable()) continue;
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

/* Waits for usb.changed (until `until`, if given) with the USB lock held once; returns ETIMEDOUT or 0. */
static int usb_wait(const struct timespec *until) {
  usb.depth = 0; /* released while waiting */
  int r = until ? pthread_cond_timedwait(&usb.changed, &usb.lock, until) : pthread_cond_wait(&usb.changed, &usb.lock);
  usb.depth = 1;
  return r;
}

/* The USB CDC receive interrupt: the next packet once the endpoint is re-armed, then `isr`. */
static void *usb_receive(void *arg) {
  (void)arg;
  uint8_t chunk[USB_PACKET];
  for (;;) {
    hosted_usb_lock();
    while (!usb.armed) usb_wait(NULL);
    hosted_usb_unlock();
    if (!wait_readable()) continue;
    ssize_t n = read(uart.fd, chunk, sizeof chunk);
    if (n <= 0) {
      if (n < 0 && errno != EINTR && errno != EAGAIN) usleep(10000);
      continue;
    }
    hosted_usb_lock();
    memcpy(usb.packet, chunk, (size_t)n);
    usb.pos = 0;
    usb.size = (uint32_t)n;
    usb.armed = 0;
    usb.isr(); /* data_rx: the callbacks attached to the core's USBSerial */
    usb.packets++;
    pthread_cond_broadcast(&usb.changed);
    hosted_usb_unlock();
  }
  return NULL;
}

void hosted_uart_attach(int fd) {
  pthread_condattr_t attr; /* timed waits on the monotonic clock, like sim_pace */
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&uart.changed, &attr);
  pthread_cond_init(&usb.changed, &attr);
  pthread_condattr_destroy(&attr);
  pthread_mutexattr_t recursive;
  pthread_mutexattr_init(&recursive);
  pthread_mutexattr_settype(&recursive, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&usb.lock, &recursive);
  pthread_mutexattr_destroy(&recursive);
  uart.fd = fd;
}

void hosted_usb_begin(void (*isr)(void)) {
  if (uart.started || uart.fd < 0) return;
  uart.usb_cdc = 1; /* no baud rate, nothing paced */
  usb.isr = isr;
  uart.started = pthread_create(&usb.thread, NULL, usb_receive, NULL) == 0;
}

void hosted_usb_lock(void) {
  pthread_mutex_lock(&usb.lock);
  usb.depth++;
}

void hosted_usb_unlock(void) {
  usb.depth--;
  pthread_mutex_unlock(&usb.lock);
}

uint32_t hosted_usb_packet_left(void) {
  hosted_usb_lock();
  uint32_t n = usb.armed ? 0 : usb.size - usb.pos;
  hosted_usb_unlock();
  return n;
}

uint32_t hosted_usb_receive_nb(uint8_t *buf, uint32_t cap) {
  hosted_usb_lock();
  uint32_t n = 0;
  if (!usb.armed) {
    n = usb.size - usb.pos < cap ? usb.size - usb.pos : cap;
    memcpy(buf, usb.packet + usb.pos, n);
    usb.pos += n;
    if (usb.pos == usb.size) { /* used up: re-arm for the next packet */
      usb.armed = 1;
      pthread_cond_broadcast(&usb.changed);
    }
  }
  hosted_usb_unlock();
  return n;
}

uint64_t hosted_usb_packets(void) {
  hosted_usb_lock();
  uint64_t n = usb.packets;
  hosted_usb_unlock();
  return n;
}

void hosted_usb_wait_packet(uint64_t seen, uint32_t wait_us) {
  uint64_t deadline = sim_monotonic_ns() + (uint64_t)wait_us * 1000u;
  struct timespec until = {(time_t)(deadline / 1000000000u), (long)(deadline % 1000000000u)};
  hosted_usb_lock();
  if (usb.depth == 1) { /* not inside the caller's own critical section */
    while (usb.packets == seen && usb_wait(&until) != ETIMEDOUT) {
    }
  }
  hosted_usb_unlock();
}

void hosted_uart_count_delivered(uint32_t n) {
  pthread_mutex_lock(&uart.lock);
  uart.delivered += n;
  pthread_mutex_unlock(&uart.lock);
}

void hosted_uart_set_held(uint32_t (*held)(void)) { uart.held = held; }

void hosted_uart_invoke_edge(int ended) {
  uint32_t (*held)(void) = uart.held;
  uint32_t framework = held ? held() : 0; /* before uart.lock: `held` takes the USB lock */
  pthread_mutex_lock(&uart.lock);
  if (!ended) {
    uart.delivered_at_start = uart.delivered;
  } else {
    uart.invoke_delivered = uart.delivered - uart.delivered_at_start;
    uart.invoke_held = held ? framework : uart.count;
  }
  pthread_mutex_unlock(&uart.lock);
}

uint64_t hosted_uart_invoke_delivered(void) {
  pthread_mutex_lock(&uart.lock);
  uint64_t n = uart.invoke_delivered;
  pthread_mutex_unlock(&uart.lock);
  return n;
}

uint32_t hosted_uart_invoke_held(void) {
  pthread_mutex_lock(&uart.lock);
  uint32_t n = uart.invoke_held;
  pthread_mutex_unlock(&uart.lock);
  return n;
}

void hosted_uart_set_baud(uint32_t baud) {
  pthread_mutex_lock(&uart.lock);
  uart.baud = baud;
  uart.byte_ns = uart.usb_cdc ? 0 : sim_byte_time_ns(baud);
  pthread_mutex_unlock(&uart.lock);
}

void hosted_uart_begin(uint32_t baud, uint32_t ring_bytes, uint32_t usable) {
  if (!uart.started) {
    uart.size = ring_bytes ? ring_bytes : 1;
    uart.usable = usable < uart.size ? usable : uart.size;
    uart.ring = calloc(uart.size, 1);
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
  uart.delivered += n;
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
