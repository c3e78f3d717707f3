/* Stand-in for ESP-IDF's esp_log.h: the stand-ins log nothing. */
#ifndef HOSTED_ESP_LOG_H
#define HOSTED_ESP_LOG_H

typedef enum { ESP_LOG_NONE = 0 } esp_log_level_t;
void esp_log_level_set(const char *tag, esp_log_level_t level);

#endif
