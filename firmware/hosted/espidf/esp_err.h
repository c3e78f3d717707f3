/* Stand-in for ESP-IDF's esp_err.h: the two codes the stand-ins use. */
#ifndef HOSTED_ESP_ERR_H
#define HOSTED_ESP_ERR_H

typedef int esp_err_t;
#define ESP_OK 0
#define ESP_FAIL -1

#endif
