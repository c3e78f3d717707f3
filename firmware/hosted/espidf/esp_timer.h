/* Stand-in for ESP-IDF's esp_timer.h: microseconds since boot. */
#ifndef HOSTED_ESP_TIMER_H
#define HOSTED_ESP_TIMER_H

#include <stdint.h>

int64_t esp_timer_get_time(void);

#endif
