/* The row codec (docs/link.md, "Compressed inputs"): an input's element bytes in rows, each predicted from the
 * row above and its left neighbours (PNG's filters, LOCO-I's median) and Rice-coded, decoded piece by piece as
 * LOAD_INPUT frames arrive, in constant state, straight into the input tensor. The host's encoder and the
 * stream's layout: harness/link/row_codec.py. */
#ifndef HP_ROW_CODEC_H
#define HP_ROW_CODEC_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The longest row the decoder holds (two rows are kept: the one above and the one being decoded); announced
 * in HELLO. 0 leaves the codec out of the build. */
#ifndef HP_ROW_CODEC_ROW_MAX
#define HP_ROW_CODEC_ROW_MAX 1024
#endif
#define HP_ROW_CODEC_PAD 8 /* zeros before each row: the left neighbours of its first element position */

typedef struct {
  uint32_t wire;  /* stream bytes decoded */
  uint32_t done;  /* elements decoded */
  uint32_t total; /* elements in the tensor */
  uint32_t bits;  /* undecoded bits, the next one the most significant */
  uint8_t nbits;
  uint8_t header_got;
  uint8_t header[4];
  uint8_t in_row; /* 0: the next bits are a row's head */
  uint8_t broken; /* the stream did not decode: nothing more of it is taken */
  uint8_t step, mode, filter, k;
  uint16_t row, col;
  uint16_t emitted; /* the current row's bytes written into the tensor (whole pixels when subtract-green) */
  uint8_t *cur, *prev;
  uint8_t rows[2 * (HP_ROW_CODEC_PAD + HP_ROW_CODEC_ROW_MAX + 1)];
} hp_row_codec;

/* Decodes `len` stream bytes that start `offset` bytes into the stream: offset 0 starts a stream afresh, bytes
 * before those already decoded are skipped (a piece resent after a loss). Returns the tensor bytes written so
 * far, -1 for a piece past what was decoded, -2 for a stream that does not decode into this tensor. */
int32_t hp_row_codec_decode(hp_row_codec *codec, uint8_t *tensor, uint32_t tensor_bytes, int float32_tensor,
                            uint32_t offset, const uint8_t *src, uint32_t len);

#ifdef __cplusplus
}
#endif

#endif
