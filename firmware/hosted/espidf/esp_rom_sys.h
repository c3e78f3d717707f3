/* Stand-in for ESP-IDF's esp_rom_sys.h: the CPU clock in MHz (HOSTED_CPU_HZ). */
#ifndef HOSTED_ESP_ROM_SYS_H
#define HOSTED_ESP_ROM_SYS_H

#include <stdint.h>

uint32_t esp_rom_get_cpu_ticks_per_us(void);

#endif
