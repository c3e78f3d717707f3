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

#if defined(__ARM_FEATURE_SIMD32) && defined(__ARM_FEATURE_SAT)
#define BYTE_SUM(x, y) __uadd8((x), (y)) /* (x + y) modulo 256 of bytes in one instruction (UADD8) */
/* LOCO-I's predictor is the median of a, b and a + b - up_left, which may be that sum saturated to a byte (past
 * 0..255 it lies past min(a, b) or max(a, b) all the same). With the DSP extension (Cortex-M4, M7, M33) each
 * min or max is a byte-wise compare that sets the GE flags (USUB8) and a select by them (SEL): 10 instructions
 * and no branch, against 15 with compares, on qemu_m4. */
#include <arm_acle.h>
static uint32_t median(uint32_t a, uint32_t b, uint32_t up_left) {
  uint32_t guess = (uint32_t)__usat((int32_t)(a + b - up_left), 8);
  (void)__usub8(a, b);
  uint32_t high = __sel(a, b), low = __sel(b, a);
  (void)__usub8(high, guess);
  uint32_t below_high = __sel(guess, high);
  (void)__usub8(low, below_high);
  return __sel(low, below_high);
}
#else
#define BYTE_SUM(x, y) (((x) + (y)) & 0xFFu)
static uint32_t median(uint32_t a, uint32_t b, uint32_t up_left) {
  uint32_t low = a < b ? a : b, high = a < b ? b : a;
  return up_left >= high ? low : up_left <= low ? high : a + b - up_left;
}
#endif

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
/* (x + G) ^ 0x80 is x + (G ^ 0x80) modulo 256: the sign flip is applied to G once a pixel. The loop counts
 * whole pixels down to its last (two instructions a pixel fewer than comparing against `to`). */
#define EMIT_PIXELS(STORE)                                          \
  {                                                                 \
    uint32_t last = from + (to - from) / 3u * 3u;                   \
    if (from != last) do {                                          \
        uint32_t g = row[from] ^ flip;                              \
        STORE(base + from, BYTE_SUM(row[from + 1], g));             \
        STORE(base + from + 1u, g);                                 \
        STORE(base + from + 2u, BYTE_SUM(row[from + 2], g));        \
      } while ((from += 3u) != last);                               \
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

/* Rice codes of at most 8 bits, looked up by the next 8 bits of the stream, a table for each k: an entry is the
 * code's length << 8 | its residual modulo 256 (zigzag undone), 0 for a longer code. One load an element instead
 * of counting ones and shifting three ways by k; 4 KB of flash. The entries are constant expressions. */
#define LEADING_ONES8(i)                                                                                   \
  ((i) == 0xFF ? 8 : (i) >= 0xFE ? 7 : (i) >= 0xFC ? 6 : (i) >= 0xF8 ? 5 : (i) >= 0xF0 ? 4 : (i) >= 0xE0 ? 3 \
   : (i) >= 0xC0 ? 2 : (i) >= 0x80 ? 1 : 0)
#define CODE_BITS(k, i) (LEADING_ONES8(i) + 1 + (k))
#define CODE_Z(k, i) \
  ((unsigned)LEADING_ONES8(i) << (k) | ((unsigned)(i) >> (CODE_BITS(k, i) <= 8 ? 8 - CODE_BITS(k, i) : 0) & ((1u << (k)) - 1u)))
#define ZIGZAG_UNDONE(z) ((((z) >> 1) ^ (0u - ((z) & 1u))) & 0xFFu)
#define ENTRY(k, i) (CODE_BITS(k, i) <= 8 ? (unsigned)CODE_BITS(k, i) << 8 | ZIGZAG_UNDONE(CODE_Z(k, i)) : 0u)
#define ENTRIES4(k, i) ENTRY(k, i), ENTRY(k, (i) + 1), ENTRY(k, (i) + 2), ENTRY(k, (i) + 3)
#define ENTRIES16(k, i) ENTRIES4(k, i), ENTRIES4(k, (i) + 4), ENTRIES4(k, (i) + 8), ENTRIES4(k, (i) + 12)
#define ENTRIES64(k, i) ENTRIES16(k, i), ENTRIES16(k, (i) + 16), ENTRIES16(k, (i) + 32), ENTRIES16(k, (i) + 48)
#define ENTRIES256(k) {ENTRIES64(k, 0), ENTRIES64(k, 64), ENTRIES64(k, 128), ENTRIES64(k, 192)}
static const uint16_t short_codes[8][256] = {ENTRIES256(0), ENTRIES256(1), ENTRIES256(2), ENTRIES256(3),
                                             ENTRIES256(4), ENTRIES256(5), ENTRIES256(6), ENTRIES256(7)};

/* The entry of a residual whose code is longer than 8 bits, as the table's: its length << 8 | its value. `codes`
 * is the row's table, which says its k (the loops keep no register for k). */
static uint32_t long_code(uint32_t bits, const uint16_t *codes) {
  uint32_t k = (uint32_t)(codes - short_codes[0]) / 256u;
  uint32_t q = leading_ones(bits), need, z;
  if (q < ESCAPE) {
    need = q + 1u + k;
    z = q << k | (bits << q) >> (31u - k); /* `bits << q` starts at the zero: its top k + 1 bits are z's low bits */
  } else {
    need = ESCAPE + 8u;
    z = (bits << ESCAPE) >> 24;
  }
  return need << 8 | (((z >> 1) ^ (0u - (z & 1u))) & 0xFFu);
}

/* The stream's undecoded bits while a piece is decoded. */
typedef struct {
  uint32_t bits, nbits; /* the next bit the most significant */
  const uint8_t *src, *end;
  const uint16_t *codes; /* short_codes[k] */
  uint32_t k;
} bit_reader;

/* A row function decodes the residuals of one row from `here` up to `stop` under one predictor, into the row
 * buffer (`above`: the row above; LEFT: the left neighbour's offset), until the bits run out, and returns where
 * it stopped. One function a predictor, its loop with the predictor inline and the reader in registers.
 * Measured slower and not kept (qemu_m4): a first loop that takes short codes unchecked while two bytes are left
 * at each refill, then a checked one for the piece's last byte (+3.5 instructions an element). */
#define ROW_FUNCTION(NAME, PREDICTION, LEFT)                                                             \
  static uint8_t *NAME(uint8_t *here, const uint8_t *stop, const uint8_t *above, int32_t left,           \
                       bit_reader *reader) {                                                            \
    uint32_t bits = reader->bits, nbits = reader->nbits;                                                \
    const uint8_t *src = reader->src, *const end = reader->end;                                         \
    const uint16_t *const codes = reader->codes;                                                        \
    (void)left;                                                                                         \
    if (here < stop) do {                                                                               \
      if (nbits <= 16u) { /* two bytes at a time: an element's code is rarely longer than 8 bits */      \
        if (end - src >= 2) {                                                                           \
          bits |= (uint32_t)(src[0] << 8 | src[1]) << (16u - nbits);                                    \
          src += 2;                                                                                     \
          nbits += 16u;                                                                                 \
        } else if (src < end) {                                                                         \
          bits |= (uint32_t)*src++ << (24u - nbits);                                                    \
          nbits += 8u;                                                                                  \
        }                                                                                               \
      }                                                                                                 \
      uint32_t residual = codes[bits >> 24];                                                            \
      if (__builtin_expect(residual == 0u, 0)) { /* up to 20 bits: as many bytes as there is room for */ \
        while (nbits <= 24u && src < end) {                                                             \
          bits |= (uint32_t)*src++ << (24u - nbits);                                                    \
          nbits += 8u;                                                                                  \
        }                                                                                               \
        residual = long_code(bits, codes);                                                              \
      }                                                                                                 \
      uint32_t need = residual >> 8;                                                                    \
      if (need > nbits) break;                                                                          \
      bits <<= need;                                                                                    \
      nbits -= need;                                                                                    \
      uint32_t a = here[LEFT], b = *above, up_left = above[LEFT];                                       \
      (void)a, (void)b, (void)up_left;                                                                  \
      *here++ = (uint8_t)((PREDICTION) + residual);                                                     \
      above++;                                                                                          \
    } while (here < stop);                                                                              \
    reader->bits = bits;                                                                                \
    reader->nbits = nbits;                                                                              \
    reader->src = src;                                                                                  \
    return here;                                                                                        \
  }

ROW_FUNCTION(none_row, 0u, left)
ROW_FUNCTION(sub_row, a, left)
ROW_FUNCTION(up_row, b, left)
ROW_FUNCTION(average_row, (a + b) >> 1, left)
ROW_FUNCTION(paeth_row, paeth(a, b, up_left), left)
ROW_FUNCTION(median_row, median(a, b, up_left), left)
/* RGB pixels' median rows (most of an image's) with the neighbours at constant offsets: a register fewer. */
ROW_FUNCTION(rgb_median_row, median(a, b, up_left), -3)

typedef uint8_t *(*row_function)(uint8_t *, const uint8_t *, const uint8_t *, int32_t, bit_reader *);
static row_function const row_functions[FILTERS] = {none_row, sub_row, up_row, average_row, paeth_row, median_row};

/* Decodes the stream bytes [src, end) into the tensor. The state lives in locals while it runs (the tensor's
 * stores could otherwise alias it) and goes back to the codec at the end. 0, or -1 for bits that do not decode. */
static int decode_bits(hp_row_codec *c, uint8_t *tensor, const uint8_t *src, const uint8_t *end) {
  bit_reader reader = {c->bits, c->nbits, src, end, short_codes[c->k], c->k};
  uint32_t col = c->col;
  const int32_t left = -(int32_t)c->step;
  int status = 0;
  for (;;) {
    if (c->done == c->total) { /* what follows the last element is the last byte's zero padding, and nothing more */
      status = reader.src < end || reader.bits || reader.nbits >= 8u ? -1 : 0;
      break;
    }
    if (!c->in_row) {
      while (reader.nbits <= 24u && reader.src < end) {
        reader.bits |= (uint32_t)*reader.src++ << (24u - reader.nbits);
        reader.nbits += 8u;
      }
      if (reader.nbits < 6u) break;
      c->filter = (uint8_t)(reader.bits >> 29);
      reader.k = (reader.bits >> 26) & 7u;
      reader.codes = short_codes[reader.k];
      if (c->filter >= FILTERS) {
        status = -1;
        break;
      }
      reader.bits <<= 6;
      reader.nbits -= 6u;
      c->in_row = 1;
      col = c->emitted = 0;
    }
    uint8_t *cur = c->cur;
    uint32_t base = c->done - c->emitted, left_in_tensor = c->total - base;
    uint32_t limit = left_in_tensor < c->row ? left_in_tensor : c->row;
    row_function decode_row = c->filter == FILTERS - 1 && left == -3 ? rgb_median_row : row_functions[c->filter];
    col = (uint32_t)(decode_row(cur + col, cur + limit, c->prev + col, left, &reader) - cur);
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
  c->bits = reader.bits;
  c->nbits = (uint8_t)reader.nbits;
  c->col = (uint16_t)col;
  c->k = (uint8_t)reader.k;
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
