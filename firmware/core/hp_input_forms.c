#include "hp_input_forms.h"

#include <string.h>

/* Each element becomes a float32 written in place; an integer of 8 bits is exact in float32, so the tensor
 * holds what the raw form would have carried, bit for bit. */
static int32_t widen(const hp_tensor_info *input, uint8_t *tensor, uint32_t offset, const uint8_t *src,
                     uint32_t len, int is_signed) {
  uint32_t elements = input->bytes / 4u;
  if (offset > elements || len > elements - offset) return -1;
  uint8_t *out = tensor + 4u * offset;
  for (uint32_t i = 0; i < len; ++i) {
    float value = is_signed ? (float)(int8_t)src[i] : (float)src[i];
    memcpy(out + 4u * i, &value, sizeof value); /* the tensor may sit at any alignment */
  }
  return (int32_t)(4u * (offset + len));
}

static int any_tensor(const hp_tensor_info *input) {
  (void)input;
  return 1;
}

static int float32_tensor(const hp_tensor_info *input) {
  return input->dtype == HP_DTYPE_FLOAT32 && input->bytes % 4u == 0;
}

static int32_t decode_raw(const hp_tensor_info *input, uint8_t *tensor, hp_row_codec *codec, uint32_t offset,
                          const uint8_t *src, uint32_t len) {
  (void)codec;
  if (offset > input->bytes || len > input->bytes - offset) return -1;
  memcpy(tensor + offset, src, len);
  return (int32_t)(offset + len);
}

static int32_t widen_u8(const hp_tensor_info *input, uint8_t *tensor, hp_row_codec *codec, uint32_t offset,
                        const uint8_t *src, uint32_t len) {
  (void)codec;
  return widen(input, tensor, offset, src, len, 0);
}

static int32_t widen_i8(const hp_tensor_info *input, uint8_t *tensor, hp_row_codec *codec, uint32_t offset,
                        const uint8_t *src, uint32_t len) {
  (void)codec;
  return widen(input, tensor, offset, src, len, 1);
}

static int32_t decode_rows(const hp_tensor_info *input, uint8_t *tensor, hp_row_codec *codec, uint32_t offset,
                           const uint8_t *src, uint32_t len) {
  return hp_row_codec_decode(codec, tensor, input->bytes, input->dtype == HP_DTYPE_FLOAT32, offset, src, len);
}

static int row_codec_built(const hp_tensor_info *input) {
  (void)input;
  return HP_ROW_CODEC_ROW_MAX > 0;
}

typedef int32_t (*hp_input_decoder)(const hp_tensor_info *input, uint8_t *tensor, hp_row_codec *codec,
                                    uint32_t offset, const uint8_t *src, uint32_t len);

/* By encoding number: the decoder, and the tensors it decodes into. */
static const struct {
  hp_input_decoder decode;
  int (*fits)(const hp_tensor_info *input);
} forms[HP_INPUT_ENCODINGS] = {
    [HP_INPUT_RAW] = {decode_raw, any_tensor},
    [HP_INPUT_WIDEN_U8] = {widen_u8, float32_tensor},
    [HP_INPUT_WIDEN_I8] = {widen_i8, float32_tensor},
    [HP_INPUT_ROWS] = {decode_rows, row_codec_built},
};

uint32_t hp_input_encodings(const hp_tensor_info *input) {
  uint32_t set = 0;
  for (uint32_t e = 0; e < HP_INPUT_ENCODINGS; ++e)
    if (forms[e].fits(input)) set |= 1u << e;
  return set;
}

int32_t hp_input_decode(uint8_t encoding, const hp_tensor_info *input, uint8_t *tensor, hp_row_codec *codec,
                        uint32_t offset, const uint8_t *src, uint32_t len) {
  if (encoding >= HP_INPUT_ENCODINGS || !forms[encoding].fits(input)) return -1;
  return forms[encoding].decode(input, tensor, codec, offset, src, len);
}

uint32_t hp_input_state_bytes(void) { return (uint32_t)sizeof(hp_row_codec); }
