/* LAYER_TRACE and LAYER_DUMP: one traced invoke of the loaded input per request (layouts in
 * docs/protocol.md). The device keeps nothing between them: the host loads the input again for each. */
#include <string.h>

#include "hp_bytes.h"
#include "hp_respond.h"
#include "hp_trace.h"

#define TRACE_HEADER_BYTES 5u /* operators run u16, first operator u16, records u8 */

/* Runs one traced invoke into `sink`; answers the error and returns 0 if it cannot. */
static int traced_invoke(hp_device *dev, const hp_frame *req, hp_trace_sink *sink) {
  const hp_runner *runner = dev->cfg.runner;
  if (!runner->invoke_traced) {
    hp_send_error(dev, req->seq, HP_ERR_UNSUPPORTED, "this runner cannot trace layers");
    return 0;
  }
  if (!hp_input_ready(dev, req)) return 0;
  int32_t status = runner->invoke_traced(runner->ctx, sink);
  hp_input_consumed(dev); /* the arena planner may have reused the input's memory */
  dev->output_valid = status == 0;
  if (status != 0) {
    hp_send_error(dev, req->seq, HP_ERR_INVOKE_FAILED, "model invoke failed");
    return 0;
  }
  return 1;
}

void hp_handle_layer_trace(hp_device *dev, const hp_frame *req) {
  if (req->length != 2) {
    hp_send_error(dev, req->seq, HP_ERR_BAD_PAYLOAD, "LAYER_TRACE needs the first operator u16");
    return;
  }
  uint8_t *start = hp_response_payload(dev);
  hp_trace_sink sink;
  hp_trace_records(&sink, hp_get_u16(req->payload), start + TRACE_HEADER_BYTES,
                   hp_response_room(dev) - TRACE_HEADER_BYTES);
  if (!traced_invoke(dev, req, &sink)) return;
  uint8_t *p = hp_put_u16(start, (uint16_t)sink.operators_run);
  p = hp_put_u16(p, sink.first_op);
  hp_put_u8(p, sink.records);
  hp_send_response(dev, HP_MSG_LAYER_TRACE | HP_RESPONSE_BIT, req->seq, TRACE_HEADER_BYTES + sink.used);
}

void hp_handle_layer_dump(hp_device *dev, const hp_frame *req) {
  if (req->length != 9) {
    hp_send_error(dev, req->seq, HP_ERR_BAD_PAYLOAD, "LAYER_DUMP needs op u16, output u8, offset u32, length u16");
    return;
  }
  uint8_t *start = hp_response_payload(dev);
  uint32_t room = hp_response_room(dev) - 4u;
  uint32_t want = hp_get_u16(req->payload + 7);
  hp_trace_sink sink;
  hp_trace_dump(&sink, hp_get_u16(req->payload), req->payload[2], hp_get_u32(req->payload + 3),
                want < room ? want : room, start + 4);
  if (!traced_invoke(dev, req, &sink)) return;
  if (!sink.found) {
    hp_send_error(dev, req->seq, HP_ERR_BAD_OFFSET, "no such operator or output in this model");
    return;
  }
  if (sink.offset > sink.tensor_bytes) {
    hp_send_error(dev, req->seq, HP_ERR_BAD_OFFSET, "offset beyond the tensor");
    return;
  }
  hp_put_u32(start, sink.tensor_bytes);
  hp_send_response(dev, HP_MSG_LAYER_DUMP | HP_RESPONSE_BIT, req->seq, 4u + sink.used);
}
