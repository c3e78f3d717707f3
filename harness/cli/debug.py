"""`harness debug layers`: a board's trace of one input against the host's, operator by operator."""

import dataclasses

from harness.console import print_json, stdout_console
from harness.results.layer_trace import LayerTrace


def cmd_layers(args) -> int:
    from harness.api.debug import trace_layers

    names = ("board", "port", "model_file", "dataset", "sample", "baud", "link_baud", "tflm", "fetch_bytes")
    options = {name: getattr(args, name) for name in names}
    trace = trace_layers(args.model, **options, progress=not (args.quiet or args.json))
    if args.json:
        first = trace.first_departure
        print_json(dataclasses.asdict(trace) | {"first_departure": first.index if first else None})
        return 0
    console = stdout_console()
    if not args.quiet:
        console.print(layers_table(trace))
    console.print(trace.headline(), highlight=False)
    return 0


def layers_table(trace: LayerTrace):
    """A row per operator: index, type, output shape, equal or not, and how it differs; the first departure marked."""
    from rich.table import Table

    table = Table(title=f"{trace.model} on {trace.board}, sample {trace.sample} ({trace.source})")
    for column, justify in (("#", "right"), ("operator", "left"), ("shape", "left"), ("", "left")):
        table.add_column(column, justify=justify)
    table.add_column("against the host", justify="left", overflow="fold")
    first = trace.first_departure
    for layer in trace.layers:
        mark = "first" if layer is first else ("=" if layer.equal else "≠")
        shape = "x".join(str(d) for d in layer.shape)
        table.add_row(str(layer.index), layer.operator, shape, mark, layer.difference_text())
    return table
