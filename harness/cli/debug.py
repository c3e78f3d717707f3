"""`harness debug` commands' handlers (the parser: harness/cli/parsers/debug.py)."""

import dataclasses

from harness.console import print_json, stdout_console
from harness.model.layer_fidelity import STATUS
from harness.results.layer_trace import LayerTrace

TENSOR = 2  # the tensor name's column


def cmd_float_vs_int8(args) -> int:
    from harness.eval.float_vs_int8 import float_vs_int8

    comparison = float_vs_int8(args.model, args.float_model, args.samples, args.dataset)
    if args.json:
        print_json(comparison.as_dict())
        return 0
    console = stdout_console()
    console.print(
        f"{comparison.card}: int8 {comparison.int8_model.name} against float {comparison.float_source.name} "
        f"(LiteRT, host), mean over {len(comparison.samples)} samples {comparison.split}",
        highlight=False,
    )
    console.print(_layer_table(comparison.report, console.width))
    skipped = comparison.report.not_compared
    if skipped:
        operators = ", ".join(sorted({row.operator for row in skipped}))
        console.print(f"not compared: {len(skipped)} integer outputs ({operators}): {STATUS['not comparable']}")
    return 0


def _figure(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _layer_table(report, width: int):
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    table = Table(
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        caption=f"* the {sum(r.worst for r in report.layers)} layers that add the most relative L2 error "
        f"to their inputs'; model input: cosine {_figure(report.input.cosine, 5)}, "
        f"rel L2 {_figure(report.input.relative_l2, 4)}",
        caption_justify="left",
    )
    rows = [_cells(row) for row in report.layers]
    headers = ("#", "operator", "tensor", "shape", "cosine", "rel L2", "")
    widths = [max([len(header), *(len(cells[column]) for cells in rows)]) for column, header in enumerate(headers)]
    others = sum(widths) - widths[TENSOR] + 3 * (len(headers) - 1)  # cells, their padding and dividers
    widths[TENSOR] = max(8, min(widths[TENSOR], width - others))  # the column that gives way to a narrow terminal
    for header, column_width in zip(headers, widths, strict=True):
        right = header in ("#", "cosine", "rel L2")
        table.add_column(header, justify="right" if right else "left", no_wrap=True, width=column_width)
    for cells in rows:
        name = cells[TENSOR]
        if len(name) > widths[TENSOR]:  # a layer's name ends in what tells it from its neighbours
            cells[TENSOR] = "…" + name[len(name) - widths[TENSOR] + 1 :]
        table.add_row(*(escape(cell) for cell in cells))
    return table


def _cells(row) -> list[str]:
    figures = [_figure(row.cosine, 5), _figure(row.relative_l2, 4)] if row.status == "compared" else ["-", row.status]
    return [
        str(row.index),
        row.operator,
        row.tensor.split(";", 1)[0],  # the fused ops' last name: the layer's own
        "x".join(map(str, row.shape)),
        *figures,
        "*" if row.worst else "",
    ]


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
