"""`harness debug`: where a model's results go wrong, layer by layer. Each command is one entry of DEBUG_COMMANDS:
a function that adds it to the group."""

from harness.cli.args import BOARD, PORT, command, group
from harness.defaults import DEFAULT_MODEL, DEMO, LAYER_FETCH_BYTES
from harness.eval.settings import TFLM_HELP
from harness.eval.settings import add_arguments as add_eval_settings
from harness.values import fetch_bytes, held_out_samples


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


def add_layers(debug) -> None:
    layers = command(
        debug,
        "layers",
        "harness.cli.debug:cmd_layers",
        "trace one input operator by operator on a board and name the first operator that departs from the host",
        ("harness debug layers --board qemu_m7", "harness debug layers --board sim --sample IMAGE_ID --json"),
    )
    BOARD.add(layers)
    layers.add_argument("--model", default=DEFAULT_MODEL, help="model card name or card .toml path")
    layers.add_argument("--model-file", help="a .tflite to use instead of the card's own file")
    PORT.add(layers)
    layers.add_argument("--dataset", default=DEMO, help="where the input comes from (default: its first sample)")
    layers.add_argument("--sample", metavar="ID", help="the sample to trace, by its id in the dataset")
    layers.add_argument("--tflm", help=TFLM_HELP)
    layers.add_argument(
        "--fetch-bytes",
        type=fetch_bytes,
        default=LAYER_FETCH_BYTES,
        help="bytes of differing tensors fetched from the board to count their differences (each frame of them "
        "runs the input once more)",
    )
    add_eval_settings(layers, ("baud", "link_baud"))


DEBUG_COMMANDS = (add_layers, add_float_vs_int8)


def add_debug(commands) -> None:
    debug = group(
        commands,
        "debug",
        "layer by layer: where a board departs from the host, where int8 departs from float",
        ("harness debug layers --board qemu_m7", "harness debug float-vs-int8 --model mlperf_tiny_vww_float"),
    )
    for add in DEBUG_COMMANDS:
        add(debug)
