/* Protocol v1 framing: sync, header, payload, CRC-32. See docs/protocol.md.
 *
 *   offset  size  field
 *   0       2     sync 0xA5 0x5A
 *   2       1     message type
 *   3       1     flags (0 in v1)
 *   4       2     sequence number, little-endian
 *   6       2     payload length N, little-endian
 *   8       N     payload
 *   8+N     4     CRC-32 of bytes 2 .. 8+N-1, little-endian
 */
#ifndef HP_FRAME_H
#define HP_FRAME_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HP_SYNC0 0xA5u
#define HP_SYNC1 0x5Au
#define HP_HEADER_BYTES 8u
#define HP_TRAILER_BYTES 4u
#define HP_FRAME_OVERHEAD (HP_HEADER_BYTES + HP_TRAILER_BYTES)
#define HP_MAX_PAYLOAD 0xFFFFu

typedef struct {
  uint8_t type;
  uint8_t flags;
  uint16_t seq;
  uint16_t length;
  const uint8_t *payload; /* points into the decoder's buffer; valid until the next feed */
  uint32_t crc;           /* the frame's CRC field as received */
} hp_frame;

typedef enum {
  HP_DECODE_NEED_MORE = 0,
  HP_DECODE_FRAME = 1,
  HP_DECODE_BAD_CRC = -1, /* a whole frame arrived but its CRC did not match; seq is set */
  HP_DECODE_TOO_LONG = -2 /* the header announced more than the buffer holds; seq is set */
} hp_decode_status;

typedef struct {
  uint8_t *buf;
  uint32_t cap;
  uint32_t have;
  uint32_t skipped; /* bytes discarded while hunting for a sync pattern, for diagnostics */
} hp_decoder;

void hp_decoder_init(hp_decoder *dec, uint8_t *buf, uint32_t cap);

/* Drop a partial frame, e.g. after the line went quiet in the middle of one. */
void hp_decoder_reset(hp_decoder *dec);

/* Consume bytes until one frame completes or the input runs out. *consumed says how many
 * bytes were used; call again with the rest. On HP_DECODE_FRAME, *frame describes it. */
hp_decode_status hp_decoder_feed(hp_decoder *dec, const uint8_t *data, uint32_t len,
                                 uint32_t *consumed, hp_frame *frame);

/* The payload already sits at buf + HP_HEADER_BYTES: write header and CRC around it.
 * Returns the frame's total size. */
uint32_t hp_frame_seal(uint8_t *buf, uint8_t type, uint16_t seq, uint16_t payload_len);

/* Copy a payload into out and seal it. Returns the frame size, or 0 if it does not fit in cap. */
uint32_t hp_frame_encode(uint8_t *out, uint32_t cap, uint8_t type, uint16_t seq,
                         const uint8_t *payload, uint16_t payload_len);

#ifdef __cplusplus
}
#endif

#endif
