#include "hp_frame.h"

#include <string.h>

#include "hp_bytes.h"
#include "hp_crc32.h"

void hp_decoder_init(hp_decoder *dec, uint8_t *buf, uint32_t cap) {
  dec->buf = buf;
  dec->cap = cap;
  dec->have = 0;
  dec->skipped = 0;
}

void hp_decoder_reset(hp_decoder *dec) {
  dec->skipped += dec->have;
  dec->have = 0;
}

static void describe(const hp_decoder *dec, hp_frame *frame) {
  frame->type = dec->buf[2];
  frame->flags = dec->buf[3];
  frame->seq = hp_get_u16(dec->buf + 4);
  frame->length = hp_get_u16(dec->buf + 6);
  frame->payload = dec->buf + HP_HEADER_BYTES;
  frame->crc = 0;
}

hp_decode_status hp_decoder_feed(hp_decoder *dec, const uint8_t *data, uint32_t len,
                                 uint32_t *consumed, hp_frame *frame) {
  uint32_t i = 0;
  while (i < len) {
    if (dec->have == 0) {
      if (data[i] == HP_SYNC0) dec->buf[dec->have++] = HP_SYNC0;
      else dec->skipped++;
      ++i;
      continue;
    }
    if (dec->have == 1) {
      if (data[i] == HP_SYNC1) {
        dec->buf[dec->have++] = HP_SYNC1;
      } else if (data[i] != HP_SYNC0) {
        dec->have = 0;
        dec->skipped += 2;
      } else {
        dec->skipped++; /* A5 A5 5A: the second A5 may start the frame */
      }
      ++i;
      continue;
    }
    if (dec->have < HP_HEADER_BYTES) {
      dec->buf[dec->have++] = data[i++];
      if (dec->have == HP_HEADER_BYTES &&
          HP_FRAME_OVERHEAD + hp_get_u16(dec->buf + 6) > dec->cap) {
        describe(dec, frame);
        hp_decoder_reset(dec);
        *consumed = i;
        return HP_DECODE_TOO_LONG;
      }
      continue;
    }
    uint32_t total = HP_FRAME_OVERHEAD + hp_get_u16(dec->buf + 6);
    uint32_t want = total - dec->have;
    uint32_t take = (len - i) < want ? (len - i) : want;
    memcpy(dec->buf + dec->have, data + i, take);
    dec->have += take;
    i += take;
    if (dec->have == total) {
      describe(dec, frame);
      uint32_t body = total - HP_TRAILER_BYTES - 2;
      frame->crc = hp_get_u32(dec->buf + total - HP_TRAILER_BYTES);
      dec->have = 0;
      *consumed = i;
      return hp_crc32_update(0, dec->buf + 2, body) == frame->crc ? HP_DECODE_FRAME
                                                                   : HP_DECODE_BAD_CRC;
    }
  }
  *consumed = i;
  return HP_DECODE_NEED_MORE;
}

uint32_t hp_frame_seal(uint8_t *buf, uint8_t type, uint16_t seq, uint16_t payload_len) {
  buf[0] = HP_SYNC0;
  buf[1] = HP_SYNC1;
  buf[2] = type;
  buf[3] = 0;
  hp_put_u16(buf + 4, seq);
  hp_put_u16(buf + 6, payload_len);
  uint32_t body = HP_HEADER_BYTES - 2 + payload_len;
  hp_put_u32(buf + 2 + body, hp_crc32_update(0, buf + 2, body));
  return HP_FRAME_OVERHEAD + payload_len;
}

uint32_t hp_frame_encode(uint8_t *out, uint32_t cap, uint8_t type, uint16_t seq,
                         const uint8_t *payload, uint16_t payload_len) {
  if ((uint32_t)payload_len + HP_FRAME_OVERHEAD > cap) return 0;
  if (payload_len) memmove(out + HP_HEADER_BYTES, payload, payload_len);
  return hp_frame_seal(out, type, seq, payload_len);
}
