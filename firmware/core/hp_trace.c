#include "hp_trace.h"

#include <math.h>
#include <string.h>

#include "hp_bytes.h"
#include "hp_crc32.h"

/* TfLiteType codes this file reads elements of. */
enum {
  T_FLOAT32 = 1,
  T_INT32 = 2,
  T_UINT8 = 3,
  T_INT64 = 4,
  T_BOOL = 6,
  T_INT16 = 7,
  T_INT8 = 9,
  T_FLOAT16 = 10,
  T_FLOAT64 = 11,
  T_UINT64 = 13,
  T_UINT32 = 16,
  T_UINT16 = 17
};

static uint32_t element_size(uint8_t dtype) {
  switch (dtype) {
    case T_UINT8: case T_INT8: case T_BOOL: return 1;
    case T_INT16: case T_UINT16: case T_FLOAT16: return 2;
    case T_INT32: case T_UINT32: case T_FLOAT32: return 4;
    case T_INT64: case T_UINT64: case T_FLOAT64: return 8;
    default: return 0;
  }
}

static int is_float(uint8_t dtype) { return dtype == T_FLOAT32 || dtype == T_FLOAT16 || dtype == T_FLOAT64; }

static uint64_t load_le(const uint8_t *p, uint32_t size) {
  uint64_t v = 0;
  for (uint32_t i = 0; i < size; ++i) v |= (uint64_t)p[i] << (8u * i);
  return v;
}

/* An integer element widened to int64 as numpy's astype(int64) does (uint64 wraps). */
static int64_t integer_at(const uint8_t *p, uint8_t dtype) {
  uint64_t raw = load_le(p, element_size(dtype));
  switch (dtype) {
    case T_INT8: return (int8_t)raw;
    case T_INT16: return (int16_t)raw;
    case T_INT32: return (int32_t)raw;
    case T_BOOL: return raw != 0;
    default: return (int64_t)raw; /* unsigned types and int64 */
  }
}

static double half_to_double(uint16_t h) {
  uint32_t sign = h >> 15, exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  double magnitude;
  if (exponent == 0) magnitude = (double)mantissa / 16777216.0; /* subnormal: mantissa x 2^-24 */
  else if (exponent == 31) magnitude = mantissa ? (double)NAN : (double)INFINITY;
  else magnitude = (double)(1024u + mantissa) * (double)(1u << exponent) / 33554432.0; /* x 2^(e-25) */
  return sign ? -magnitude : magnitude;
}

static double float_at(const uint8_t *p, uint8_t dtype) {
  uint64_t raw = load_le(p, element_size(dtype));
  if (dtype == T_FLOAT16) return half_to_double((uint16_t)raw);
  if (dtype == T_FLOAT64) {
    double d;
    memcpy(&d, &raw, sizeof d);
    return d;
  }
  uint32_t bits = (uint32_t)raw;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

static uint64_t double_bits(double d) {
  uint64_t bits;
  memcpy(&bits, &d, sizeof bits);
  return bits;
}

static void float_digest(const uint8_t *data, uint32_t count, uint8_t dtype, hp_digest *digest) {
  uint32_t size = element_size(dtype);
  double lo = float_at(data, dtype), hi = lo, total = 0.0;
  int nan = 0;
  for (uint32_t i = 0; i < count; ++i) {
    double v = float_at(data + i * size, dtype);
    if (v != v) nan = 1; /* numpy's min and max propagate NaN */
    if (v < lo) lo = v;
    if (v > hi) hi = v;
    total += v;
  }
  if (nan) lo = hi = (double)NAN;
  digest->minimum = double_bits(lo);
  digest->maximum = double_bits(hi);
  digest->total = double_bits(total);
}

static void integer_digest(const uint8_t *data, uint32_t count, uint8_t dtype, hp_digest *digest) {
  uint32_t size = element_size(dtype);
  int64_t lo = integer_at(data, dtype), hi = lo;
  uint64_t total = 0; /* wraps modulo 2^64, as the host's int64 sum does */
  for (uint32_t i = 0; i < count; ++i) {
    int64_t v = integer_at(data + i * size, dtype);
    if (v < lo) lo = v;
    if (v > hi) hi = v;
    total += (uint64_t)v;
  }
  digest->minimum = (uint64_t)lo;
  digest->maximum = (uint64_t)hi;
  digest->total = total;
}

void hp_tensor_digest(const uint8_t *data, uint32_t bytes, uint8_t dtype, hp_digest *digest) {
  memset(digest, 0, sizeof *digest);
  digest->crc32 = hp_crc32_update(0, data, bytes);
  uint32_t size = element_size(dtype);
  uint32_t count = size ? bytes / size : 0;
  if (count == 0) return;
  if (is_float(dtype)) float_digest(data, count, dtype, digest);
  else integer_digest(data, count, dtype, digest);
}

void hp_plant_fault(uint8_t *data, uint32_t bytes, uint8_t dtype) {
  uint32_t size = element_size(dtype);
  if (!data || bytes == 0) return;
  if (dtype == T_FLOAT32 && bytes >= 4) {
    float f;
    memcpy(&f, data, sizeof f);
    f += 1.0f;
    memcpy(data, &f, sizeof f);
    return;
  }
  if (is_float(dtype) || size == 0) size = 1; /* other floats and unknown types: their first byte */
  uint64_t v = load_le(data, size) + 1u; /* little-endian: adding 1 to the element wraps within its width */
  for (uint32_t i = 0; i < size; ++i) data[i] = (uint8_t)(v >> (8u * i));
}

void hp_trace_records(hp_trace_sink *sink, uint16_t first_op, uint8_t *buf, uint32_t room) {
  memset(sink, 0, sizeof *sink);
  sink->mode = HP_TRACE_RECORDS;
  sink->first_op = first_op;
  sink->buf = buf;
  sink->room = room;
}

void hp_trace_dump(hp_trace_sink *sink, uint16_t op_index, uint8_t output, uint32_t offset, uint32_t length,
                   uint8_t *buf) {
  memset(sink, 0, sizeof *sink);
  sink->mode = HP_TRACE_DUMP;
  sink->op_index = op_index;
  sink->output = output;
  sink->offset = offset;
  sink->length = length;
  sink->buf = buf;
}

static void pack_record(hp_trace_sink *sink, uint32_t op, const char *tag, const hp_trace_output *outputs,
                        uint32_t count) {
  size_t tag_len = tag ? strlen(tag) : 0;
  if (tag_len > HP_TRACE_MAX_TAG) tag_len = HP_TRACE_MAX_TAG;
  if (count > 255u) count = 255u;
  uint32_t size = 2u + 1u + (uint32_t)tag_len + 1u + count * HP_TRACE_OUTPUT_BYTES;
  if (sink->full || sink->records == 255u || sink->used + size > sink->room) {
    sink->full = 1; /* records stay whole and in order: the host asks again from the first one missing */
    return;
  }
  uint8_t *p = sink->buf + sink->used;
  p = hp_put_u16(p, (uint16_t)op);
  p = hp_put_u8(p, (uint8_t)tag_len);
  memcpy(p, tag, tag_len);
  p += tag_len;
  p = hp_put_u8(p, (uint8_t)count);
  for (uint32_t i = 0; i < count; ++i) {
    hp_digest d;
    hp_tensor_digest(outputs[i].data, outputs[i].bytes, outputs[i].dtype, &d);
    p = hp_put_u32(p, (uint32_t)outputs[i].tensor_index);
    p = hp_put_u8(p, outputs[i].dtype);
    p = hp_put_u32(p, outputs[i].bytes);
    p = hp_put_u32(p, d.crc32);
    p = hp_put_u64(p, d.minimum);
    p = hp_put_u64(p, d.maximum);
    p = hp_put_u64(p, d.total);
  }
  sink->used += size;
  sink->records++;
}

static void copy_slice(hp_trace_sink *sink, const hp_trace_output *out) {
  sink->found = 1;
  sink->tensor_bytes = out->bytes;
  if (sink->offset >= out->bytes) return;
  uint32_t n = out->bytes - sink->offset;
  if (n > sink->length) n = sink->length;
  memcpy(sink->buf, out->data + sink->offset, n);
  sink->used = n;
}

void hp_trace_operator(hp_trace_sink *sink, const char *tag, const hp_trace_output *outputs, uint32_t count) {
  uint32_t op = sink->operators_run++;
  if (sink->mode == HP_TRACE_RECORDS) {
    if (op >= sink->first_op) pack_record(sink, op, tag, outputs, count);
  } else if (op == sink->op_index && sink->output < count) {
    copy_slice(sink, &outputs[sink->output]);
  }
}
