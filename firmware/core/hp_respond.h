/* Inside the device core: how a request handler answers (hp_device.c), for handlers kept in files of their
 * own (hp_run_requests.c, hp_layer_requests.c). Not for boards or runners. */
#ifndef HP_RESPOND_H
#define HP_RESPOND_H

#include "hp_device.h"

uint8_t *hp_response_payload(hp_device *dev);
uint32_t hp_response_room(const hp_device *dev);
void hp_send_response(hp_device *dev, uint8_t type, uint16_t seq, uint32_t payload_len);
void hp_send_error(hp_device *dev, uint16_t seq, uint16_t code, const char *message);
uint64_t hp_now(const hp_device *dev); /* the HAL's ticks, 0 without a clock */
/* 1 when the whole input is loaded; else answers INPUT_INCOMPLETE and returns 0. */
int hp_input_ready(hp_device *dev, const hp_frame *req);
/* The model ran on the input (the arena planner may have reused its memory): the next run needs a new one. */
void hp_input_consumed(hp_device *dev);

void hp_handle_perf(hp_device *dev, const hp_frame *req);
void hp_handle_bench(hp_device *dev, const hp_frame *req);
void hp_handle_profile(hp_device *dev, const hp_frame *req);
void hp_handle_stream_start(hp_device *dev, const hp_frame *req);
void hp_handle_stream_audio(hp_device *dev, const hp_frame *req);
void hp_handle_layer_trace(hp_device *dev, const hp_frame *req);
void hp_handle_layer_dump(hp_device *dev, const hp_frame *req);

#endif
