/* TensorFlow's bilinear resize (half-pixel centres, no antialias) of an HxWxC image into float32, in
 * TF's own arithmetic and order, for harness's preprocessing (harness/eval/preprocess.py computes the
 * neighbours and weights; this only blends). Loaded with ctypes, which releases the GIL for the call,
 * so decoding threads resize side by side.
 *
 * Built with -ffp-contract=off: a fused multiply-add would round differently from TF. */
#include <stdint.h>

#define RESIZE_BILINEAR(name, pixel)                                                                   \
  void name(const pixel *image, int32_t in_width, int32_t channels, const int64_t *y0, const int64_t *y1, \
            const float *fy, int32_t height, const int64_t *x0, const int64_t *x1, const float *fx,       \
            int32_t width, float *out) {                                                               \
    for (int32_t i = 0; i < height; ++i) {                                                             \
      const pixel *upper = image + y0[i] * in_width * channels;                                        \
      const pixel *lower = image + y1[i] * in_width * channels;                                        \
      for (int32_t j = 0; j < width; ++j) {                                                            \
        const pixel *ul = upper + x0[j] * channels, *ur = upper + x1[j] * channels;                    \
        const pixel *ll = lower + x0[j] * channels, *lr = lower + x1[j] * channels;                    \
        for (int32_t c = 0; c < channels; ++c) {                                                       \
          float top_left = ul[c], top_right = ur[c], bottom_left = ll[c], bottom_right = lr[c];        \
          float top = top_left + (top_right - top_left) * fx[j];                                       \
          float bottom = bottom_left + (bottom_right - bottom_left) * fx[j];                           \
          *out++ = top + (bottom - top) * fy[i];                                                       \
        }                                                                                              \
      }                                                                                                \
    }                                                                                                  \
  }

RESIZE_BILINEAR(hp_resize_bilinear_u8, uint8_t)
RESIZE_BILINEAR(hp_resize_bilinear_f32, float)
