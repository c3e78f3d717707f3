"""harness's Python API (docs/api.md): open a board, evaluate, time and stream on it, read runs back.

    import harness

    with harness.open_board("sim") as board:
        run = board.evaluate(subsets="distance_far")
    run.summary.subsets["distance_far"].device.accuracy
    run.samples_frame()  # samples.parquet as a pandas DataFrame

Every call raises harness.errors exceptions (UserError for bad input, LinkError, BuildError) and prints
nothing unless asked (`progress=True`). The names are imported when first used, so `import harness` stays
light (the command line imports the package on every command)."""

import importlib

# public name -> the module that defines it
API = {
    "open_board": "harness.api.board",
    "Board": "harness.api.board",
    "evaluate": "harness.api.evaluation",
    "resume": "harness.api.evaluation",
    "perf": "harness.api.measure",
    "profile": "harness.api.measure",
    "trace_layers": "harness.api.debug",
    "layers_frame": "harness.api.debug",
    "stream": "harness.api.streaming",
    "load_run": "harness.api.runs",
    "EvalRun": "harness.api.runs",
    "StreamRun": "harness.api.runs",
    "Figure": "harness.api.figures",
    "float_vs_int8": "harness.api.debug",
}

__all__ = sorted(API)


def __getattr__(name: str):
    if name not in API:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(API[name]), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *API})
