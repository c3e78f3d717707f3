/* The forms an input may take on the wire (docs/protocol.md, "Input encodings"): HELLO announces the ones this
 * device decodes for its input tensor, LOAD_INPUT names one, and the decode writes straight into the tensor,
 * frame by frame; the row codec (hp_row_codec.h) keeps its state between frames in the device. */
#ifndef HP_INPUT_FORMS_H
#define HP_INPUT_FORMS_H

#include <stdint.h>

#include "hp_device.h"

#ifdef __cplusplus
extern "C" {
#endif

enum hp_input_encoding {
  HP_INPUT_RAW = 0,      /* the tensor's bytes as they are */
  HP_INPUT_WIDEN_U8 = 1, /* one uint8 per element, widened to the tensor's float32 (exact integers) */
  HP_INPUT_WIDEN_I8 = 2, /* one int8 per element, widened to float32 */
  HP_INPUT_ROWS = 3,     /* the row codec's stream of the element bytes (hp_row_codec.h), as they are or widened */
  HP_INPUT_ENCODINGS = 4
};

/* Bit e set: encoding e decodes into this tensor (raw always does). */
uint32_t hp_input_encodings(const hp_tensor_info *input);

/* Decode `len` wire bytes that start `offset` wire bytes into the input into `tensor`; `codec` keeps a stateful
 * decoder's state from one piece to the next. Returns the tensor bytes decoded up to the end of this piece, -1
 * when the piece runs past the tensor (or, for a stateful decoder, starts past what it decoded), -2 when the
 * bytes do not decode into this tensor. The encoding must be one hp_input_encodings announces. */
int32_t hp_input_decode(uint8_t encoding, const hp_tensor_info *input, uint8_t *tensor, hp_row_codec *codec,
                        uint32_t offset, const uint8_t *src, uint32_t len);

/* The size of the decoders' state (hp_row_codec), for the host's tests that decode through the core. */
uint32_t hp_input_state_bytes(void);

#ifdef __cplusplus
}
#endif

#endif
