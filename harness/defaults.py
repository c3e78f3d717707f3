"""Defaults and names the command line's parser shows, in a module that imports nothing.

`python -m harness` builds its whole parser before it runs a command, and refuses a bad flag right there:
what the parser needs (a flag's default, its choices, its help text) must not cost numpy, pydantic or TFLM.
Each value belongs to the module named beside it, which takes it from here (and where its meaning is
documented); tests/unit/architecture/test_cli_startup.py checks the names against their owners.
"""

DEFAULT_BOARD = "sim"  # harness/boards.py: the virtual board
# --board's and --port's help, for every command that takes them (harness/cli/args.py, harness/eval/settings.py)
BOARD_HELP = "board id from boards/ (sim: the virtual board)"
PORT_HELP = "serial device or pyserial URL of a real board, or 'auto' (default: found by USB id)"
DEFAULT_MODEL = "mlperf_tiny_vww"  # harness/model/card_schema.py
DEMO = "demo"  # harness/samples.py: the dataset spec of each task's demo set
REFERENCE_NAMES = ("tflm", "litert_ref", "litert")  # harness/model/references.py: the keys of REFERENCES
DEFAULT_REFERENCES = ("tflm", "litert_ref")  # harness/model/references.py
AUTO_POOL_SAMPLES = 2000  # harness/eval/sampling.py: the most pool samples a run without --limit adds unasked
MLPERF_WINDOW_SECONDS = 10.0  # harness/eval/perf_energy.py: MLPerf Tiny's least window of device time
DEFAULT_SPLIT_SEED = 0  # harness/eval/convert.py: the calibration / held-out draw; fixed so a conversion repeats
MAX_BAUD = 16_000_000  # the fastest UART rate harness drives or emulates (options and board files alike)
# Bytes of differing tensors a layer trace fetches from the board to count their differences: each frame of them
# runs the input once more on the board, after loading it again (docs/debug.md).
LAYER_FETCH_BYTES = 64 * 1024
