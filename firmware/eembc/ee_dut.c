#include "ee_dut.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EE_LINE 128u

static void put(ee_dut *dut, const char *text) {
  uint32_t len = (uint32_t)strlen(text);
  while (len > 0) {
    int32_t n = dut->cfg.hal->write(dut->cfg.hal->ctx, (const uint8_t *)text, len);
    if (n <= 0) return;
    text += n;
    len -= (uint32_t)n;
  }
}

static void line(ee_dut *dut, const char *text) {
  put(dut, text);
  put(dut, "\r\n");
}

/* A free-running microsecond count, 32 bits wide and wrapping as the reference's does. */
static uint32_t micros(const ee_dut *dut) {
  const hp_hal *hal = dut->cfg.hal;
  if (!hal->ticks || !hal->tick_hz) return 0;
  return (uint32_t)(hal->ticks(hal->ctx) * 1000000u / hal->tick_hz);
}

static void timestamp(ee_dut *dut) {
  char text[EE_LINE];
  snprintf(text, sizeof text, "m-lap-us-%lu", (unsigned long)micros(dut));
  line(dut, text);
}

static int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static void db_hex(ee_dut *dut, const char *hex) {
  char text[EE_LINE];
  size_t len = strlen(hex);
  if (len % 2) {
    line(dut, "e-[Insufficent number of hex digits]");
    return;
  }
  for (size_t i = 0; i < len; i += 2) {
    int hi = hex_value(hex[i]), lo = hex_value(hex[i + 1]);
    if (hi < 0 || lo < 0) {
      snprintf(text, sizeof text, "e-[Invalid hex digit '%c%c']", hex[i], hex[i + 1]);
      line(dut, text);
      return;
    }
    if (dut->loaded >= dut->expected) {
      line(dut, "e-[More bytes than db load announced]");
      return;
    }
    dut->cfg.buffer[dut->loaded++] = (uint8_t)(hi << 4 | lo);
  }
  if (len && dut->loaded == dut->expected) line(dut, "m-load-done");
}

static void db(ee_dut *dut, const char *args) {
  char text[EE_LINE];
  if (strncmp(args, "load ", 5) == 0) {
    unsigned long n = strtoul(args + 5, NULL, 10);
    if (n == 0 || n > dut->cfg.buffer_cap) {
      snprintf(text, sizeof text, "e-[db load %lu: the buffer holds %lu bytes]", n, (unsigned long)dut->cfg.buffer_cap);
      line(dut, text);
      return;
    }
    dut->expected = (uint32_t)n;
    dut->loaded = 0;
    snprintf(text, sizeof text, "m-[Expecting %lu bytes]", n);
    line(dut, text);
  } else if (strcmp(args, "print") == 0) {
    for (uint32_t i = 0; i < dut->loaded; i += 8) {
      int at = snprintf(text, sizeof text, "m-buffer");
      for (uint32_t j = i; j < i + 8 && j < dut->loaded; ++j)
        at += snprintf(text + at, sizeof text - (size_t)at, "-%02x", dut->cfg.buffer[j]);
      line(dut, text);
    }
  } else {
    db_hex(dut, args);
  }
}

static float output_value(const ee_dut *dut, const uint8_t *out, uint32_t i) {
  const hp_tensor_info *t = &dut->model.output;
  if (t->dtype == 1) {
    float f;
    memcpy(&f, out + 4 * i, 4);
    return f;
  }
  int32_t q = t->dtype == 9 ? (int32_t)(int8_t)out[i] : (int32_t)out[i];
  return t->scale ? (float)(q - t->zero_point) * t->scale : (float)q;
}

static void results(ee_dut *dut) {
  char text[32];
  if (!dut->have_results) {
    line(dut, "e-[No results: run infer first]");
    return;
  }
  const uint8_t *out = dut->cfg.runner->output(dut->cfg.runner->ctx);
  uint32_t count = dut->model.output.dtype == 1 ? dut->model.output.bytes / 4 : dut->model.output.bytes;
  put(dut, "m-results-[");
  for (uint32_t i = 0; i < count; ++i) {
    snprintf(text, sizeof text, "%f,", (double)output_value(dut, out, i));
    put(dut, text); /* the reference's trailing comma included */
  }
  line(dut, "]");
}

static void infer(ee_dut *dut, const char *args) {
  char text[EE_LINE];
  char *end;
  unsigned long n = strtoul(args, &end, 10);
  unsigned long w = *end ? strtoul(end, NULL, 10) : EE_DEFAULT_WARMUPS;
  const hp_runner *runner = dut->cfg.runner;
  if (dut->runner_status != 0) {
    line(dut, "e-[The model failed to load]");
    return;
  }
  if (n == 0) {
    line(dut, "e-[infer needs a count of at least 1]");
    return;
  }
  if (dut->loaded != dut->model.input.bytes || dut->expected != dut->loaded) {
    snprintf(text, sizeof text, "e-[Loaded %lu bytes, the input tensor needs %lu]", (unsigned long)dut->loaded,
             (unsigned long)dut->model.input.bytes);
    line(dut, text);
    return;
  }
  memcpy(runner->input(runner->ctx), dut->cfg.buffer, dut->loaded); /* th_load_tensor */
  int32_t status = 0;
  snprintf(text, sizeof text, "m-warmup-start-%lu", w);
  line(dut, text);
  for (unsigned long i = 0; i < w && status == 0; ++i) status = runner->invoke(runner->ctx);
  line(dut, "m-warmup-done");
  snprintf(text, sizeof text, "m-infer-start-%lu", n);
  line(dut, text);
  timestamp(dut);
  for (unsigned long i = 0; i < n && status == 0; ++i) status = runner->invoke(runner->ctx);
  timestamp(dut);
  if (status != 0) {
    dut->have_results = 0;
    line(dut, "e-[Inference failed]");
    return;
  }
  line(dut, "m-infer-done");
  dut->have_results = 1;
  results(dut);
}

static void run_command(ee_dut *dut, char *cmd) {
  char text[EE_LINE];
  if (strcmp(cmd, "name") == 0) {
    snprintf(text, sizeof text, "m-name-dut-[%s]", dut->cfg.name);
    line(dut, text);
  } else if (strcmp(cmd, "profile") == 0) {
    line(dut, "m-profile-[ULPMark for tinyML Firmware V0.0.1]");
    snprintf(text, sizeof text, "m-model-[%s]", dut->cfg.model);
    line(dut, text);
  } else if (strcmp(cmd, "help") == 0) {
    line(dut, "name, profile, timestamp, db load N, db HEX, db print, infer N W, results");
  } else if (strcmp(cmd, "timestamp") == 0) {
    timestamp(dut);
  } else if (strncmp(cmd, "db ", 3) == 0) {
    db(dut, cmd + 3);
  } else if (strncmp(cmd, "infer ", 6) == 0 || strcmp(cmd, "infer") == 0) {
    infer(dut, cmd + (cmd[5] ? 6 : 5));
  } else if (strcmp(cmd, "results") == 0) {
    results(dut);
  } else if (cmd[0]) {
    snprintf(text, sizeof text, "e-[Unknown command: %.60s]", cmd);
    line(dut, text);
  }
  line(dut, "m-ready");
}

int32_t ee_dut_init(ee_dut *dut, const ee_dut_config *cfg) {
  memset(dut, 0, sizeof *dut);
  if (!cfg->buffer || !cfg->buffer_cap) return -1;
  dut->cfg = *cfg;
  dut->runner_status = cfg->runner->setup(cfg->runner->ctx, &dut->model);
  line(dut, "m-timestamp-mode-performance");
  timestamp(dut);
  line(dut, "m-init-done");
  line(dut, "m-ready");
  return 0;
}

int32_t ee_dut_poll(ee_dut *dut, uint32_t timeout_ms) {
  uint8_t chunk[256];
  int32_t got = dut->cfg.hal->read(dut->cfg.hal->ctx, chunk, sizeof chunk, timeout_ms);
  for (int32_t i = 0; i < got; ++i) {
    char c = (char)chunk[i];
    if (c == '%') {
      dut->cmd[dut->cmd_len] = '\0';
      dut->cmd_len = 0;
      run_command(dut, dut->cmd);
    } else if (dut->cmd_len < EE_CMD_SIZE) {
      dut->cmd[dut->cmd_len++] = c;
    } else {
      dut->cmd[EE_CMD_SIZE - 1] = c; /* the reference overwrites the last slot */
    }
  }
  return got < 0 ? got : 0;
}
