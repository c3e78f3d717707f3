/* Stand-in for ESP-IDF's esp_cpu.h: the CPU cycle counter (CCOUNT), from the host's clock. */
#ifndef HOSTED_ESP_CPU_H
#define HOSTED_ESP_CPU_H

#include <stdint.h>

typedef uint32_t esp_cpu_cycle_count_t;
esp_cpu_cycle_count_t esp_cpu_get_cycle_count(void);

#endif
