"""Debugging a model from Python, layer by layer (docs/debug.md): where a board departs from the host
(trace_layers, layers_frame), where int8 departs from float (float_vs_int8)."""

import argparse
from pathlib import Path
from types import SimpleNamespace

from harness.console import quieted
from harness.defaults import DEFAULT_BOARD, DEFAULT_MODEL, DEMO, LAYER_FETCH_BYTES
from harness.errors import UserError, setting
from harness.extras import require
from harness.link.registry import NATIVE_PROTOCOL
from harness.results.layer_trace import LayerTrace


def float_vs_int8(model: str, float_model: str | Path | None = None, samples: int = 8, dataset: str = DEMO):
    """Every operator output of the card's int8 model against its float model, as a pandas DataFrame (pandas:
    the `lab` extra): one row per layer with its cosine similarity and relative L2 error, the means over
    `samples` held-out samples; `frame.attrs` says which models and samples. Arguments as
    `harness debug float-vs-int8` takes them."""
    pandas = require("pandas", "harness.float_vs_int8()")
    from harness.eval.float_vs_int8 import float_vs_int8 as compare

    result = compare(model, float_model, _samples(samples), dataset).as_dict()
    frame = pandas.DataFrame(result.pop("layers"))
    frame.attrs = result
    return frame


def _samples(samples) -> int:
    """The command line's range, refused in the same words."""
    from harness.values import held_out_samples

    try:
        return held_out_samples(str(samples)) if not isinstance(samples, bool) else held_out_samples("bool")
    except argparse.ArgumentTypeError as exc:
        raise UserError(f"{setting('samples')}: {exc}") from None


def trace_layers(
    model: str = DEFAULT_MODEL,
    *,
    board: str = DEFAULT_BOARD,
    port: str | None = None,
    model_file: str | None = None,
    dataset: str = DEMO,
    sample: str | None = None,
    baud: int | None = None,
    link_baud: int | None = None,
    tflm: str | None = None,
    fetch_bytes: int = LAYER_FETCH_BYTES,
    progress: bool = False,
) -> LayerTrace:
    """Run the dataset's first sample (or `sample`, by id) on the board with every operator's outputs digested
    as they lie in its arena, and compare each with the host TFLM interpreter's: a LayerTrace (its
    `first_departure`, `headline()`, and per operator equal or not, the largest difference and how many
    elements differ, counted on up to `fetch_bytes` of differing tensors fetched from the board).
    `layers_frame(trace)` gives it as a DataFrame."""
    from harness.api.measure import _timed
    from harness.eval.layer_diff import trace_layers as trace
    from harness.link.roles import LayerTracing

    connection = SimpleNamespace(**locals(), protocol=NATIVE_PROTOCOL, emulate_invoke_ms=None)

    def measure(client, started, data, tflite):
        return trace(client, started, model, tflite.data, data, connection.sample_id, fetch_bytes)

    with quieted(not progress):
        return _timed(connection, measure, (LayerTracing,))


def layers_frame(trace: LayerTrace):
    """A trace as a pandas DataFrame, a row per operator (index, operator, shape, equal, largest, unit,
    differing, elements); the trace's headline, first departure and source in `.attrs`."""
    pandas = require("pandas", "harness.api.layers_frame()")
    frame = pandas.DataFrame([vars(layer) for layer in trace.layers])
    first = trace.first_departure
    frame.attrs.update(
        headline=trace.headline(),
        first_departure=first.index if first else None,
        source=trace.source,
        board=trace.board,
        model=trace.model,
        sample=trace.sample,
    )
    return frame
