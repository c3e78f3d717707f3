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

static uint32_t predict(const hp_row_codec *c, uint32_t col) {
  const uint8_t *cur = c->cur + col, *above = c->prev + col; /* the row pads make [-step] a zero at the start */
  uint32_t a = cur[-(int32_t)c->step], b = above[0], up_left = above[-(int32_t)c->step];
  switch (c->filter) {
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

/* The decoded byte at `col` of the row into its tensor element. Subtract-green pixels come as G, R - G, B - G:
 * the colour channels add the pixel's G back and land one element before or after. */
static void put(hp_row_codec *c, uint8_t *tensor, uint32_t col, uint32_t value) {
  uint32_t at = c->done;
  if (c->mode & MODE_GREEN) {
    if (c->channel == 0) {
      at += 1u;
    } else {
      value = (value + c->cur[col - c->channel]) & 0xFFu;
      at -= c->channel == 1 ? 1u : 0u;
    }
    c->channel = c->channel == 2 ? 0 : (uint8_t)(c->channel + 1);
  }
  if (c->mode & MODE_SIGNED) value ^= 0x80u;
  switch (c->mode & 3u) {
    case OUT_BYTES: tensor[at] = (uint8_t)value; return;
    case OUT_WIDEN_U8: {
      float f = (float)value;
      memcpy(tensor + 4u * at, &f, sizeof f); /* the tensor may sit at any alignment */
      return;
    }
    default: {
      float f = (float)(int8_t)value;
      memcpy(tensor + 4u * at, &f, sizeof f);
    }
  }
}

/* Decodes the whole symbols the bit buffer holds. 0 when it needs more bytes, -1 for bits that do not decode. */
static int drain(hp_row_codec *c, uint8_t *tensor) {
  while (c->done < c->total) {
    if (!c->in_row) {
      if (c->nbits < 6u) return 0;
      uint32_t head = c->bits >> 26;
      c->filter = (uint8_t)(head >> 3);
      c->k = (uint8_t)(head & 7u);
      if (c->filter >= FILTERS) return -1;
      c->bits <<= 6;
      c->nbits -= 6u;
      c->in_row = 1;
      c->col = 0;
    }
    uint32_t q = leading_ones(c->bits), need, z;
    if (q < ESCAPE) {
      need = q + 1u + c->k;
      if (need > c->nbits) return 0;
      z = q << c->k | (c->bits << (q + 1u)) >> (31u - c->k) >> 1;
      if (z > 255u) return -1;
    } else {
      need = ESCAPE + 8u;
      if (need > c->nbits) return 0;
      z = (c->bits << ESCAPE) >> 24;
    }
    c->bits <<= need;
    c->nbits = (uint8_t)(c->nbits - need);
    uint32_t value = (predict(c, c->col) + ((z >> 1) ^ (0u - (z & 1u)))) & 0xFFu;
    c->cur[c->col] = (uint8_t)value;
    put(c, tensor, c->col, value);
    c->done++;
    if (++c->col == c->row) {
      uint8_t *above = c->cur;
      c->cur = c->prev;
      c->prev = above;
      c->in_row = 0;
    }
  }
  return c->bits == 0 ? 0 : -1; /* all decoded: what is left is the last byte's zero padding */
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
  for (uint32_t i = skip; i < len && decodes; ++i) {
    uint8_t byte = src[i];
    c->wire++;
    if (c->header_got < sizeof c->header) {
      c->header[c->header_got++] = byte;
      if (c->header_got == sizeof c->header) decodes = start_rows(c, tensor_bytes, float32_tensor);
      continue;
    }
    decodes = c->done < c->total; /* no bytes past the end of the stream */
    c->bits |= (uint32_t)byte << (24u - c->nbits);
    c->nbits = (uint8_t)(c->nbits + 8u);
    if (decodes) decodes = drain(c, tensor) == 0;
  }
  c->broken = (uint8_t)!decodes;
  return decodes ? tensor_bytes_done(c) : UNDECODABLE;
}
