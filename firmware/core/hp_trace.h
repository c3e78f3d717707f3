/* Layer traces (LAYER_TRACE, LAYER_DUMP): what each operator of one invoke wrote, summarised or copied.
 *
 * A runner that can trace runs one invoke and, as each operator of the main graph finishes, hands that
 * operator's output tensors (as they lie in its memory) to hp_trace_operator. Everything else is here, once:
 * the digest of a tensor (CRC-32, minimum, maximum and in-order sum: harness/tensor_digest.py defines the
 * same on the host), the packing of trace records into an answer, and the copy of a tensor's slice. Record
 * layout: docs/protocol.md.
 */
#ifndef HP_TRACE_H
#define HP_TRACE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HP_TRACE_MAX_TAG 32u    /* an operator name is cut to this many characters */
#define HP_TRACE_OUTPUT_BYTES 37u /* i32 tensor, u8 dtype, u32 bytes, u32 crc, then min, max, sum 8 bytes each */

/* One output tensor of a finished operator. */
typedef struct {
  const uint8_t *data;
  uint32_t bytes;
  uint8_t dtype; /* TfLiteType code, as hp_dtype */
  int32_t tensor_index;
} hp_trace_output;

/* The digest of one tensor: min, max and sum are int64 for integer and bool dtypes (the sum wraps modulo
 * 2^64) and IEEE float64 bits for float dtypes (widened, summed in element order). Other dtypes: 0. */
typedef struct {
  uint32_t crc32;
  uint64_t minimum;
  uint64_t maximum;
  uint64_t total;
} hp_digest;

enum hp_trace_mode { HP_TRACE_RECORDS = 0, HP_TRACE_DUMP = 1 };

/* Where a traced invoke's operators go. Filled by hp_trace_records / hp_trace_dump, then given to the
 * runner's invoke_traced; the runner calls hp_trace_operator once per operator, in order. */
typedef struct hp_trace_sink {
  uint8_t mode;
  uint32_t operators_run;
  /* HP_TRACE_RECORDS: whole records from first_op on, packed at buf while they fit in room. */
  uint16_t first_op;
  uint8_t records;
  uint8_t full;
  /* HP_TRACE_DUMP: `length` bytes from `offset` of output `output` of operator `op_index`. */
  uint16_t op_index;
  uint8_t output;
  uint32_t offset;
  uint32_t length;
  uint32_t tensor_bytes; /* the dumped tensor's size, once its operator ran (else 0) */
  uint8_t found;
  uint8_t *buf;
  uint32_t room;
  uint32_t used;
} hp_trace_sink;

void hp_trace_records(hp_trace_sink *sink, uint16_t first_op, uint8_t *buf, uint32_t room);
void hp_trace_dump(hp_trace_sink *sink, uint16_t op_index, uint8_t output, uint32_t offset, uint32_t length,
                   uint8_t *buf);

/* The runner's call as operator number sink->operators_run finishes; `tag` is its name as the runtime's
 * profiler tag gives it. */
void hp_trace_operator(hp_trace_sink *sink, const char *tag, const hp_trace_output *outputs, uint32_t count);

void hp_tensor_digest(const uint8_t *data, uint32_t bytes, uint8_t dtype, hp_digest *digest);

/* The planted fault (a test build's deliberate error): adds 1, wrapping, to the tensor's first element. */
void hp_plant_fault(uint8_t *data, uint32_t bytes, uint8_t dtype);

#ifdef __cplusplus
}
#endif

#endif
