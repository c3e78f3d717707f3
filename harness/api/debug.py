"""Debugging a model from Python: float against int8 layer by layer (docs/debug.md)."""

import argparse
from pathlib import Path

from harness.defaults import DEMO
from harness.errors import UserError, setting
from harness.extras import require


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
