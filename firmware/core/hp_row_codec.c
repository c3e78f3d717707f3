#include "hp_row_codec.h"

#include <string.h>

enum { OUT_BYTES = 0, OUT_WIDEN_U8 = 1, OUT_WIDEN_I8 = 2, MODE_SIGNED = 4, MODE_GREEN = 8, ESCAPE = 12, FILTERS = 6 };

#define UNDECODABLE (-2)

static uint32_t leading_ones(uint32_t bits) {
  bits = ~bits;
  return bits ? (uint32_t)__builtin_clz(bits) : 32u;
}

static int32_t tensor_bytes_done(const hp_row_codec *c) {
  return (int32_t)((c->mode & 3u) == OUT_BYTES ? c->done : 4u * c->done);
}

static int start_rows(hp_row_codec *c, uint32_t tensor_bytes, int float32_tensor) {
  c->row = (uint16_t)(c->header[0] | c->header[1] << 8);
  c->step = c->header[2];
  c->mode = c->header[3];
  uint32_t out = c->mode & 3u;
  if (c->row == 0 || c->row > HP_ROW_CODEC_ROW_MAX || c->step == 0 || c->step > HP_ROW_CODEC_PAD ||
      c->step > c->row || c->mode > (MODE_GREEN | MODE_SIGNED | OUT_WIDEN_I8) || out > OUT_WIDEN_I8)
    return 0;
  /* Subtract-green: pixels of three channels, whole pixels a row and in the tensor. */
  if (c->mode & MODE_GREEN && (c->step != 3 || c->row % 3u != 0)) return 0;
  if (out != OUT_BYTES && !(float32_tensor && tensor_bytes % 4u == 0)) return 0;
  c->total = out == OUT_BYTES ? tensor_bytes : tensor_bytes / 4u;
  if (c->mode & MODE_GREEN && c->total % 3u != 0) return 0;
  memset(c->rows, 0, sizeof c->rows);
  c->prev = c->rows + HP_ROW_CODEC_PAD;
  c->cur = c->prev + HP_ROW_CODEC_ROW_MAX + 1 + HP_ROW_CODEC_PAD;
  return 1;
}

static uint32_t predict(uint32_t filter, const uint8_t *cur, const uint8_t *above, int32_t left) {
  uint32_t a = cur[left], b = above[0], up_left = above[left]; /* the row pads make [left] a zero at the start */
  switch (filter) {
    case 0: return 0;
    case 1: return a;
    case 2: return b;
    case 3: return (a + b) >> 1;
    case 4: {
      int32_t pa = (int32_t)(b - up_left), pb = (int32_t)(a - up_left), pc = (int32_t)(a + b - 2 * up_left);
      pa = pa < 0 ? -pa : pa;
      pb = pb < 0 ? -pb : pb;
      pc = pc < 0 ? -pc : pc;
      return pa <= pb && pa <= pc ? a : pb <= pc ? b : up_left;
    }
    default: {
      uint32_t low = a < b ? a : b, high = a < b ? b : a;
      return up_left >= high ? low : up_left <= low ? high : a + b - up_left;
    }
  }
}

static void put_float(uint8_t *at, float value) { memcpy(at, &value, sizeof value); } /* at any alignment */

/* Decodes the stream bytes [src, end) into the tensor. The state lives in locals while it runs (the tensor's
 * stores could otherwise alias it) and goes back to the codec at the end. 0, or -1 for bits that do not decode. */
static int decode_bits(hp_row_codec *c, uint8_t *tensor, const uint8_t *src, const uint8_t *end) {
  uint32_t bits = c->bits, nbits = c->nbits, col = c->col, done = c->done, k = c->k, filter = c->filter;
  uint32_t in_row = c->in_row, channel = c->channel;
  const uint32_t total = c->total, row = c->row, out = c->mode & 3u, green = c->mode & MODE_GREEN;
  const uint32_t flip = c->mode & MODE_SIGNED ? 0x80u : 0u;
  const int32_t left = -(int32_t)c->step;
  uint8_t *cur = c->cur, *prev = c->prev;
  int status = 0;
  for (;;) {
    while (nbits <= 24u && src < end) {
      bits |= (uint32_t)*src++ << (24u - nbits);
      nbits += 8u;
    }
    if (done == total) { /* what follows the last element is the last byte's zero padding, and nothing more */
      status = src < end || bits || nbits >= 8u ? -1 : 0;
      break;
    }
    if (!in_row) {
      if (nbits < 6u) break;
      filter = bits >> 29;
      k = (bits >> 26) & 7u;
      if (filter >= FILTERS) {
        status = -1;
        break;
      }
      bits <<= 6;
      nbits -= 6u;
      in_row = 1;
      col = 0;
      continue;
    }
    uint32_t q = leading_ones(bits), need, z;
    if (q < ESCAPE) {
      need = q + 1u + k;
      if (need > nbits) break;
      z = q << k | (bits << (q + 1u)) >> (31u - k) >> 1;
      if (z > 255u) {
        status = -1;
        break;
      }
    } else {
      need = ESCAPE + 8u;
      if (need > nbits) break;
      z = (bits << ESCAPE) >> 24;
    }
    bits <<= need;
    nbits -= need;
    uint32_t value = (predict(filter, cur + col, prev + col, left) + ((z >> 1) ^ (0u - (z & 1u)))) & 0xFFu;
    cur[col] = (uint8_t)value;
    /* Subtract-green pixels come as G, R - G, B - G: the colour channels add the pixel's G back and land one
     * element before or after. */
    uint32_t at = done;
    if (green) {
      if (channel == 0) {
        at += 1u;
      } else {
        value = (value + cur[col - channel]) & 0xFFu;
        at -= channel == 1 ? 1u : 0u;
      }
      channel = channel == 2 ? 0 : channel + 1u;
    }
    value ^= flip;
    if (out == OUT_BYTES)
      tensor[at] = (uint8_t)value;
    else
      put_float(tensor + 4u * at, out == OUT_WIDEN_U8 ? (float)value : (float)(int8_t)value);
    done++;
    if (++col == row) {
      uint8_t *above = cur;
      cur = prev;
      prev = above;
      in_row = 0;
    }
  }
  c->bits = bits;
  c->nbits = (uint8_t)nbits;
  c->col = (uint16_t)col;
  c->done = done;
  c->k = (uint8_t)k;
  c->filter = (uint8_t)filter;
  c->in_row = (uint8_t)in_row;
  c->channel = (uint8_t)channel;
  c->cur = cur;
  c->prev = prev;
  return status;
}

int32_t hp_row_codec_decode(hp_row_codec *c, uint8_t *tensor, uint32_t tensor_bytes, int float32_tensor,
                            uint32_t offset, const uint8_t *src, uint32_t len) {
  if (offset == 0) {
    c->wire = c->done = c->total = c->bits = 0;
    c->nbits = c->header_got = c->in_row = c->broken = c->channel = 0;
    c->mode = OUT_BYTES;
  }
  if (c->broken) return UNDECODABLE;
  if (offset > c->wire) return -1;
  uint32_t skip = c->wire - offset;
  if (skip >= len) return tensor_bytes_done(c);
  int decodes = 1;
  uint32_t i = skip;
  while (i < len && c->header_got < sizeof c->header) {
    c->header[c->header_got++] = src[i++];
    if (c->header_got == sizeof c->header) decodes = start_rows(c, tensor_bytes, float32_tensor);
  }
  if (decodes && i < len) decodes = decode_bits(c, tensor, src + i, src + len) == 0;
  c->wire = offset + len;
  c->broken = (uint8_t)!decodes;
  return decodes ? tensor_bytes_done(c) : UNDECODABLE;
}
