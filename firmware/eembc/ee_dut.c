#include "ee_dut.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EE_LINE 160u /* holds "e-[Unknown command: %s]" with an EE_CMD_SIZE token */

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
  if (dut->cfg.timestamp_pulse) { /* energy mode: the pin, no line (the reference's th_timestamp) */
    dut->cfg.timestamp_pulse(dut->cfg.hal->ctx);
    return;
  }
  snprintf(text, sizeof text, "m-lap-us-%lu", (unsigned long)micros(dut));
  line(dut, text);
}

static int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* strtok(NULL, " ") without its hidden state: skips spaces, cuts the next token off, NULL at the end. */
static char *next_token(char **cursor) {
  char *p = *cursor;
  while (*p == ' ') ++p;
  if (!*p) {
    *cursor = p;
    return NULL;
  }
  char *token = p;
  while (*p && *p != ' ') ++p;
  if (*p) *p++ = '\0';
  *cursor = p;
  return token;
}

/* The reference's atoi on its 32-bit targets, where strtol saturates at LONG_MAX = INT32_MAX; no
 * overflow here, so `infer 99999999999` neither wraps nor is undefined. */
static int32_t ee_atoi(const char *s) {
  while (*s == ' ' || (*s >= '\t' && *s <= '\r')) ++s;
  int negative = *s == '-';
  if (*s == '-' || *s == '+') ++s;
  int64_t value = 0;
  for (; *s >= '0' && *s <= '9'; ++s) {
    value = value * 10 + (*s - '0');
    if (value > (int64_t)INT32_MAX + 1) value = (int64_t)INT32_MAX + 1;
  }
  if (negative) return value > (int64_t)INT32_MAX ? INT32_MIN : (int32_t)-value;
  return value > INT32_MAX ? INT32_MAX : (int32_t)value;
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
    if (dut->loaded >= dut->expected) { /* the reference writes on past its buffer here */
      line(dut, "e-[More bytes than db load announced]");
      return;
    }
    dut->cfg.buffer[dut->loaded++] = (uint8_t)(hi << 4 | lo);
    if (dut->loaded == dut->expected) {
      line(dut, "m-load-done"); /* the rest of the digits disregarded, as the reference */
      return;
    }
  }
}

/* ee_buffer_parse */
static void db(ee_dut *dut, char **args) {
  char text[EE_LINE];
  char *sub = next_token(args);
  if (!sub) {
    line(dut, "e-[Command 'db' requires a subcommand]");
  } else if (strcmp(sub, "load") == 0) {
    char *count = next_token(args);
    if (!count) {
      line(dut, "e-[Command 'db load' requires the # of bytes]");
      return;
    }
    int32_t n = ee_atoi(count);
    dut->expected = 0;
    if (n == 0) {
      line(dut, "e-[Command 'db load' must be >0 bytes]");
      return;
    }
    dut->loaded = 0;
    if ((uint32_t)n > dut->cfg.buffer_cap) {
      /* The reference's text and bare "\n"; it keeps the size and overruns on the next db, ours
       * accepts no bytes until a db load that fits. */
      snprintf(text, sizeof text, "Supplied buffer size %ld exceeds maximum of %lu\n", (long)n,
               (unsigned long)dut->cfg.buffer_cap);
      put(dut, text);
      return;
    }
    dut->expected = (uint32_t)n;
    snprintf(text, sizeof text, "m-[Expecting %lu bytes]", (unsigned long)n);
    line(dut, text);
  } else if (strcmp(sub, "print") == 0) {
    uint32_t i = 0;
    for (; i < dut->expected; ++i) {
      if (i % 8 == 0) put(dut, "m-buffer-");
      snprintf(text, sizeof text, "%02x", dut->cfg.buffer[i]);
      put(dut, text);
      put(dut, (i + 1) % 8 == 0 || i + 1 == dut->expected ? "\r\n" : "-");
    }
    if (i % 8 != 0) put(dut, "\r\n"); /* the reference's empty line after a short last row */
  } else {
    db_hex(dut, sub);
  }
}

/* printf's "%0.Nf" of a float, without printf's floating point (newlib-nano has none): the float times
 * 10^N is exact in a double (24 + 20 bits at most), so its integer part and the rest are exact too, and
 * the rounding is printf's own: the nearest, ties to even. Writes at most 32 characters. */
static void format_fixed(char *text, float value, unsigned decimals) {
  static const uint32_t POW10[] = {1u, 10u, 100u, 1000u, 10000u, 100000u, 1000000u};
  if (value != value) {
    strcpy(text, "nan");
    return;
  }
  int negative = value < 0.0f || (value == 0.0f && 1.0f / value < 0.0f);
  double scaled = (negative ? -(double)value : (double)value) * (double)POW10[decimals];
  if (scaled >= 1.8e19) { /* past 64 bits (and inf): printf would print every digit; say so plainly */
    strcpy(text, negative ? "-inf" : "inf");
    return;
  }
  uint64_t whole = (uint64_t)scaled;
  double rest = scaled - (double)whole;
  if (rest > 0.5 || (rest == 0.5 && (whole & 1u))) ++whole;
  char digits[24];
  int n = 0;
  do {
    digits[n++] = (char)('0' + whole % 10u);
    whole /= 10u;
  } while (whole || n <= (int)decimals);
  char *p = text;
  if (negative) *p++ = '-';
  while (n > (int)decimals) *p++ = digits[--n];
  if (decimals) *p++ = '.';
  while (n > 0) *p++ = digits[--n];
  *p = '\0';
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

static float feature(const ee_dut *dut, uint32_t i) {
  float f;
  memcpy(&f, dut->cfg.buffer + 4 * i, 4);
  return f;
}

/* C's round on a float (halves away from zero), without libm: the integer part is exact below 2^23, and
 * the fraction x - trunc(x) is exact too; from 2^23 on (and for NaN) x is its own rounding. */
static float round_half_away(float x) {
  if (!(x > -8388608.0f && x < 8388608.0f)) return x;
  float t = (float)(int32_t)x;
  float frac = x - t;
  if (frac >= 0.5f) return t + 1.0f;
  if (frac <= -0.5f) return t - 1.0f;
  return t;
}

/* th_load_tensor of the reference AD submission: QuantizeFloatToInt8 of each feature (NaN as the zero
 * point, where the reference's conversion is undefined). */
static void quantize_features(const ee_dut *dut, uint8_t *input) {
  const hp_tensor_info *t = &dut->model.input;
  for (uint32_t i = 0; i < t->bytes; ++i) {
    float r = round_half_away(feature(dut, i) / t->scale);
    if (r != r) r = 0.0f;
    r += (float)t->zero_point;
    if (r < -128.0f) r = -128.0f;
    if (r > 127.0f) r = 127.0f;
    input[i] = (uint8_t)(int8_t)(int32_t)r;
  }
}

/* calculate_result of the reference AD submission: float32 throughout, in feature order. */
static float reconstruction_mse(const ee_dut *dut, const uint8_t *out) {
  const hp_tensor_info *t = &dut->model.output;
  float sum = 0.0f;
  for (uint32_t i = 0; i < t->bytes; ++i) {
    float diff = (float)((int32_t)(int8_t)out[i] - t->zero_point) * t->scale - feature(dut, i);
    sum += diff * diff;
  }
  return sum / (float)t->bytes;
}

static void results(ee_dut *dut) {
  char text[48];
  if (!dut->have_results) {
    line(dut, "e-[No results: run infer first]");
    return;
  }
  const uint8_t *out = dut->cfg.runner->output(dut->cfg.runner->ctx);
  if (dut->cfg.computation == EE_COMPUTE_RECONSTRUCTION_MSE) {
    put(dut, "m-results-[");
    format_fixed(text, reconstruction_mse(dut, out), 3);
    put(dut, text);
    line(dut, "]");
    return;
  }
  uint32_t count = dut->model.output.dtype == 1 ? dut->model.output.bytes / 4 : dut->model.output.bytes;
  put(dut, "m-results-[");
  for (uint32_t i = 0; i < count; ++i) {
    format_fixed(text, output_value(dut, out, i), 6); /* as "%f" */
    put(dut, text);
    put(dut, ","); /* the reference's trailing comma included */
  }
  line(dut, "]");
}

/* th_load_tensor, then one inference. The input goes into the tensor before every invoke: TFLM's arena
 * plan may reuse the input tensor's bytes for later tensors, so an invoke can leave it changed, and the
 * runner runs `infer N W` on one loaded input. */
static int32_t invoke_loaded(ee_dut *dut) {
  const hp_runner *runner = dut->cfg.runner;
  uint8_t *input = runner->input(runner->ctx);
  if (dut->cfg.computation == EE_COMPUTE_RECONSTRUCTION_MSE) {
    quantize_features(dut, input);
  } else if (dut->cfg.uint8_input) {
    for (uint32_t i = 0; i < dut->loaded; ++i) input[i] = (uint8_t)(dut->cfg.buffer[i] - 128u);
  } else {
    memcpy(input, dut->cfg.buffer, dut->loaded);
  }
  return runner->invoke(runner->ctx);
}

static void infer(ee_dut *dut, char **args) {
  char text[EE_LINE];
  uint32_t n = 1, w = EE_DEFAULT_WARMUPS;
  char *arg = next_token(args);
  if (arg) {
    int32_t i = ee_atoi(arg);
    if (i <= 0) {
      line(dut, "e-[Inference iterations must be >0]");
      return;
    }
    n = (uint32_t)i;
    if ((arg = next_token(args)) != NULL) {
      i = ee_atoi(arg);
      if (i < 0) {
        line(dut, "e-[Inference warmup must be >=0]");
        return;
      }
      w = (uint32_t)i;
    }
  }
  if (n > EE_MAX_INFERENCES || w > EE_MAX_INFERENCES) {
    snprintf(text, sizeof text, "e-[Inference %s must be <=%lu]", n > EE_MAX_INFERENCES ? "iterations" : "warmup",
             (unsigned long)EE_MAX_INFERENCES);
    line(dut, text);
    return;
  }
  if (dut->runner_status != 0) {
    line(dut, "e-[The model failed to load]");
    return;
  }
  if (dut->loaded != dut->input_bytes || dut->expected != dut->loaded) {
    snprintf(text, sizeof text, "e-[Loaded %lu bytes, the input tensor needs %lu]", (unsigned long)dut->loaded,
             (unsigned long)dut->input_bytes);
    line(dut, text);
    return;
  }
  int32_t status = 0;
  snprintf(text, sizeof text, "m-warmup-start-%lu", (unsigned long)w);
  line(dut, text);
  for (uint32_t i = 0; i < w && status == 0; ++i) status = invoke_loaded(dut);
  line(dut, "m-warmup-done");
  snprintf(text, sizeof text, "m-infer-start-%lu", (unsigned long)n);
  line(dut, text);
  timestamp(dut);
  for (uint32_t i = 0; i < n && status == 0; ++i) status = invoke_loaded(dut);
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

static const char *const HELP[] = {
    EE_FW_VERSION,
    "",
    "help         : Print this information",
    "name         : Print the name of the device",
    "timestsamp   : Generate a timetsamp",
    "db SUBCMD    : Manipulate a generic byte buffer",
    "  load N     : Allocate N bytes and set load counter",
    "  db HH[HH]* : Load 8-bit hex byte(s) until N bytes",
    "  print [N=16] [offset=0]",
    "             : Print N bytes at offset as hex",
    "infer N [W=0]: Load input, execute N inferences after W warmup loops",
    "results      : Return the result fp32 vector",
};

/* ee_serial_command_parser_callback and ee_profile_parse: the first space-separated token picks
 * the command, later tokens are its arguments and any beyond those are ignored. */
static void run_command(ee_dut *dut, char *cmd) {
  char text[EE_LINE];
  char *rest = cmd;
  const char *tok = next_token(&rest);
  if (!tok) tok = ""; /* the reference passes strtok's NULL on to strncmp here */
  if (strcmp(tok, "name") == 0) {
    snprintf(text, sizeof text, "m-name-dut-[%.*s]", (int)EE_CMD_SIZE, dut->cfg.name);
    line(dut, text);
  } else if (strcmp(tok, "timestamp") == 0) {
    timestamp(dut);
  } else if (strcmp(tok, "profile") == 0) {
    line(dut, "m-profile-[" EE_FW_VERSION "]");
    snprintf(text, sizeof text, "m-model-[%.*s]", (int)EE_CMD_SIZE, dut->cfg.model);
    line(dut, text);
  } else if (strcmp(tok, "help") == 0) {
    for (size_t i = 0; i < sizeof HELP / sizeof *HELP; ++i) line(dut, HELP[i]);
  } else if (strcmp(tok, "db") == 0) {
    db(dut, &rest);
  } else if (strcmp(tok, "infer") == 0) {
    infer(dut, &rest);
  } else if (strcmp(tok, "results") == 0) {
    results(dut);
  } else {
    snprintf(text, sizeof text, "e-[Unknown command: %s]", tok);
    line(dut, text);
  }
  line(dut, "m-ready");
}

int32_t ee_dut_init(ee_dut *dut, const ee_dut_config *cfg) {
  memset(dut, 0, sizeof *dut);
  if (!cfg->buffer || !cfg->buffer_cap) return -1;
  dut->cfg = *cfg;
  if (!dut->cfg.name || !dut->cfg.name[0]) dut->cfg.name = EE_DEFAULT_NAME;
  if (!dut->cfg.model || !dut->cfg.model[0]) dut->cfg.model = EE_DEFAULT_MODEL;
  dut->runner_status = cfg->runner->setup(cfg->runner->ctx, &dut->model);
  dut->input_bytes = dut->model.input.bytes;
  if (cfg->computation == EE_COMPUTE_RECONSTRUCTION_MSE) {
    const hp_tensor_info *in = &dut->model.input, *out = &dut->model.output;
    /* int8 in and out, one output per input, quantized: anything else cannot be scored */
    if (in->dtype != 9 || out->dtype != 9 || in->bytes != out->bytes || in->scale == 0.0f || out->scale == 0.0f)
      dut->runner_status = -1;
    dut->input_bytes = 4u * in->bytes;
  }
  line(dut, dut->cfg.timestamp_pulse ? "m-timestamp-mode-energy" : "m-timestamp-mode-performance");
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
    } /* else dropped: the reference overwrites slot EE_CMD_SIZE, which the '%' then ends */
  }
  return got < 0 ? got : 0;
}
