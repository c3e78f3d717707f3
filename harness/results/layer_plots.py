"""The report's figure of a layer trace: per operator, the share of its output elements that differ from the host."""

import numpy as np

from harness.results.layer_trace import LayerTrace
from harness.results.plots import DEVICE_COLOUR, Figure, Omitted, draw, pyplot

UNFETCHED_COLOUR = "#7f7f7f"


def trace_figure(trace: LayerTrace) -> Figure:
    return draw(f"layer trace of sample {trace.sample}: elements that differ, per operator", _bars, trace)


def _bars(trace: LayerTrace) -> object:
    """A bar per operator: the share of its elements that differ (grey and full height where they were not
    fetched); the first departure marked."""
    first = trace.first_departure
    if first is None:
        raise Omitted(f"every one of the {len(trace.layers)} operators equals the host's: nothing to draw")
    index = np.arange(len(trace.layers))
    shares = [
        (layer.differing / layer.elements if layer.elements else 0.0) if layer.fetched else 0.0
        for layer in trace.layers
    ]
    unfetched = [not layer.equal and not layer.fetched for layer in trace.layers]
    fig, ax = pyplot().subplots(figsize=(max(6.0, 0.12 * len(index) + 2), 3.2), layout="constrained")
    ax.bar(index, shares, color=DEVICE_COLOUR, label="share of elements that differ")
    if any(unfetched):
        ax.bar(
            index[unfetched], [1.0] * sum(unfetched), color=UNFETCHED_COLOUR, alpha=0.4, label="differs, not fetched"
        )
    ax.axvline(
        first.index,
        color="black",
        linestyle="--",
        linewidth=1,
        label=f"first departure: {first.index} {first.operator}",
    )
    ax.set_xlim(-0.8, len(index) - 0.2)
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("operator, in the order it ran")
    ax.set_ylabel("share of elements")
    ax.legend(loc="upper left", frameon=False, fontsize="small")
    return fig
