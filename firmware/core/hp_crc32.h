/* CRC-32 (IEEE 802.3, reflected, poly 0xEDB88320): the same value zlib.crc32 gives. */
#ifndef HP_CRC32_H
#define HP_CRC32_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Continue a running CRC: start with crc = 0. */
uint32_t hp_crc32_update(uint32_t crc, const uint8_t *data, size_t len);

#ifdef __cplusplus
}
#endif

#endif
