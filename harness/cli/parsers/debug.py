"""`harness debug`: where a model's results go wrong, layer by layer. Each command is one entry of DEBUG_COMMANDS:
a function that adds it to the group."""

from harness.cli.args import command, group
from harness.defaults import DEMO
from harness.values import held_out_samples


def add_float_vs_int8(debug) -> None:
    compare = command(
        debug,
        "float-vs-int8",
        "harness.cli.debug:cmd_float_vs_int8",
        "where int8 departs from float: cosine and relative L2 error of every layer on held-out samples",
        (
            "harness debug float-vs-int8 --model mlperf_tiny_vww_float",
            "harness debug float-vs-int8 --model mlperf_tiny_vww --float-model visual_wake_words.h5 --samples 4",
        ),
    )
    compare.add_argument("--model", required=True, help="model card name or card .toml path")
    compare.add_argument(
        "--float-model",
        help="the float .tflite, .keras or .h5 model (default: the card's float model; an int8 card needs it)",
    )
    compare.add_argument(
        "--samples", type=held_out_samples, default=8, help="held-out samples to compare on (mean per layer)"
    )
    compare.add_argument("--dataset", default=DEMO, help="where the samples come from")


DEBUG_COMMANDS = (add_float_vs_int8,)


def add_debug(commands) -> None:
    debug = group(
        commands,
        "debug",
        "where a model's results go wrong: layer by layer",
        "harness debug float-vs-int8 --model mlperf_tiny_vww_float",
    )
    for add in DEBUG_COMMANDS:
        add(debug)
