#include "hp_row_codec.h"

#include <stdint.h>
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

static uint32_t paeth(uint32_t a, uint32_t b, uint32_t up_left) {
  int32_t pa = (int32_t)(b - up_left), pb = (int32_t)(a - up_left), pc = (int32_t)(a + b - 2 * up_left);
  pa = pa < 0 ? -pa : pa;
  pb = pb < 0 ? -pb : pb;
  pc = pc < 0 ? -pc : pc;
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : up_left;
}

static uint32_t median(uint32_t a, uint32_t b, uint32_t up_left) {
  uint32_t low = a < b ? a : b, high = a < b ? b : a;
  return up_left >= high ? low : up_left <= low ? high : a + b - up_left;
}

/* Element stores, as macros so that -Os keeps them inline in emit's loops. */
#define AS_BYTE(at, value) (tensor[at] = (uint8_t)(value))
#define AS_FLOAT(at, value)                                                       \
  do {                                                                            \
    float widened_ = (float)(value);                                              \
    memcpy(tensor + 4u * (at), &widened_, sizeof widened_); /* at any alignment */ \
  } while (0)
#define AS_U8_FLOAT(at, value) AS_FLOAT(at, (uint32_t)(value))
#define AS_I8_FLOAT(at, value) AS_FLOAT(at, (int8_t)(value))
/* A float32 tensor at a 4-byte boundary takes each element in one store (one instruction an element fewer on
 * Cortex-M4 than memcpy's way through a core register); may_alias: the tensor is the caller's bytes. */
typedef float tensor_float __attribute__((may_alias));
#define AS_ALIGNED_U8_FLOAT(at, value) (((tensor_float *)(void *)tensor)[at] = (float)(uint32_t)(value))
#define AS_ALIGNED_I8_FLOAT(at, value) (((tensor_float *)(void *)tensor)[at] = (float)(int8_t)(value))
/* (x + G) ^ 0x80 is x + (G ^ 0x80) modulo 256: the sign flip is applied to G once a pixel. */
#define EMIT_PIXELS(STORE)                             \
  for (; from + 3u <= to; from += 3u) {                \
    uint32_t g = row[from] ^ flip;                     \
    STORE(base + from, (row[from + 1] + g) & 0xFFu);   \
    STORE(base + from + 1u, g);                        \
    STORE(base + from + 2u, (row[from + 2] + g) & 0xFFu); \
  }
#define EMIT_BYTES(STORE) \
  for (; from < to; ++from) STORE(base + from, row[from] ^ flip);

/* The row's decoded bytes [from, to) into the tensor from element `base`, as they were before the encoder's
 * transforms: subtract-green pixels (G, R - G, B - G) whole, each byte back to int8 for signed elements, widened
 * when the tensor is float32. Returns the row bytes written. */
static uint32_t emit(const hp_row_codec *c, uint8_t *tensor, uint32_t base, uint32_t from, uint32_t to) {
  const uint32_t flip = c->mode & MODE_SIGNED ? 0x80u : 0u;
  const uint8_t *row = c->cur;
  uint32_t aligned = ((uintptr_t)tensor & 3u) == 0 ? 8u : 0u;
  switch (aligned | (c->mode & 3u) << 1 | (c->mode & MODE_GREEN ? 1u : 0u)) {
    case 8 | OUT_WIDEN_U8 << 1: EMIT_BYTES(AS_ALIGNED_U8_FLOAT) break;
    case 8 | OUT_WIDEN_U8 << 1 | 1: EMIT_PIXELS(AS_ALIGNED_U8_FLOAT) break;
    case 8 | OUT_WIDEN_I8 << 1: EMIT_BYTES(AS_ALIGNED_I8_FLOAT) break;
    case 8 | OUT_WIDEN_I8 << 1 | 1: EMIT_PIXELS(AS_ALIGNED_I8_FLOAT) break;
    case OUT_BYTES << 1:
    case 8 | OUT_BYTES << 1: EMIT_BYTES(AS_BYTE) break;
    case OUT_BYTES << 1 | 1:
    case 8 | OUT_BYTES << 1 | 1: EMIT_PIXELS(AS_BYTE) break;
    case OUT_WIDEN_U8 << 1: EMIT_BYTES(AS_U8_FLOAT) break;
    case OUT_WIDEN_U8 << 1 | 1: EMIT_PIXELS(AS_U8_FLOAT) break;
    case OUT_WIDEN_I8 << 1: EMIT_BYTES(AS_I8_FLOAT) break;
    default: EMIT_PIXELS(AS_I8_FLOAT) break;
  }
  return from;
}

/* The residuals of one row up to `stop` under one predictor, into the row buffer at `here` (`above`: the row
 * above; LEFT: the left neighbour's offset), until the bits run out. A macro, so that each filter's loop has its
 * predictor inline. A residual's k low bits follow its ones and their zero: `bits << q` starts at that zero, so
 * its top k + 1 bits are their value. */
#define ROW_LOOP(PREDICTION, LEFT)                                           \
  while (here < stop) {                                                      \
    if (nbits <= 24u) {                                                      \
      while (nbits <= 24u && src < end) {                                    \
        bits |= (uint32_t)*src++ << (24u - nbits);                           \
        nbits += 8u;                                                         \
      }                                                                      \
    }                                                                        \
    uint32_t q = leading_ones(bits), need, z;                                \
    if (q < ESCAPE) {                                                        \
      need = q + 1u + k;                                                     \
      z = q << k | (bits << q) >> (31u - k);                                 \
    } else {                                                                 \
      need = ESCAPE + 8u;                                                    \
      z = (bits << ESCAPE) >> 24;                                            \
    }                                                                        \
    if (need > nbits) break;                                                 \
    bits <<= need;                                                           \
    nbits -= need;                                                           \
    uint32_t a = here[LEFT], b = *above, up_left = above[LEFT];              \
    (void)a, (void)b, (void)up_left;                                         \
    *here++ = (uint8_t)((PREDICTION) + ((z >> 1) ^ (0u - (z & 1u))));        \
    above++;                                                                 \
  }

/* Decodes the stream bytes [src, end) into the tensor. The state lives in locals while it runs (the tensor's
 * stores could otherwise alias it) and goes back to the codec at the end. 0, or -1 for bits that do not decode. */
static int decode_bits(hp_row_codec *c, uint8_t *tensor, const uint8_t *src, const uint8_t *end) {
  uint32_t bits = c->bits, nbits = c->nbits, col = c->col, k = c->k;
  const int32_t left = -(int32_t)c->step;
  int status = 0;
  for (;;) {
    if (c->done == c->total) { /* what follows the last element is the last byte's zero padding, and nothing more */
      status = src < end || bits || nbits >= 8u ? -1 : 0;
      break;
    }
    if (!c->in_row) {
      while (nbits <= 24u && src < end) {
        bits |= (uint32_t)*src++ << (24u - nbits);
        nbits += 8u;
      }
      if (nbits < 6u) break;
      c->filter = (uint8_t)(bits >> 29);
      k = (bits >> 26) & 7u;
      if (c->filter >= FILTERS) {
        status = -1;
        break;
      }
      bits <<= 6;
      nbits -= 6u;
      c->in_row = 1;
      col = c->emitted = 0;
    }
    uint8_t *cur = c->cur, *here = cur + col;
    const uint8_t *above = c->prev + col;
    uint32_t base = c->done - c->emitted, left_in_tensor = c->total - base;
    uint32_t limit = left_in_tensor < c->row ? left_in_tensor : c->row;
    const uint8_t *stop = cur + limit;
    switch (c->filter) {
      case 0: ROW_LOOP(0u, left) break;
      case 1: ROW_LOOP(a, left) break;
      case 2: ROW_LOOP(b, left) break;
      case 3: ROW_LOOP((a + b) >> 1, left) break;
      case 4: ROW_LOOP(paeth(a, b, up_left), left) break;
      default:
        /* RGB pixels' median rows (most of an image's) with the neighbours at constant offsets: a register and a
         * load fewer, 2 instructions an element on qemu_m4. The other filters' loops measured slower so. */
        if (left == -3) {
          ROW_LOOP(median(a, b, up_left), -3)
        } else {
          ROW_LOOP(median(a, b, up_left), left)
        }
        break;
    }
    col = (uint32_t)(here - cur);
    uint32_t emitted = emit(c, tensor, base, c->emitted, col);
    c->done += emitted - c->emitted;
    c->emitted = (uint16_t)emitted;
    if (col < limit) break; /* the bits ran out mid-row */
    if (col == c->row) {
      c->cur = c->prev;
      c->prev = cur;
      c->in_row = 0;
    }
  }
  c->bits = bits;
  c->nbits = (uint8_t)nbits;
  c->col = (uint16_t)col;
  c->k = (uint8_t)k;
  return status;
}

int32_t hp_row_codec_decode(hp_row_codec *c, uint8_t *tensor, uint32_t tensor_bytes, int float32_tensor,
                            uint32_t offset, const uint8_t *src, uint32_t len) {
  if (offset == 0) {
    c->wire = c->done = c->total = c->bits = 0;
    c->nbits = c->header_got = c->in_row = c->broken = 0;
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
