"""The rows of an eval run's samples.parquet, checked with pyarrow compute (no Python loop over rows, so a run
of any size is checked in the time of reading its few columns): sample ids present, plain and once each;
labels and predictions classes of the model; scores finite; ticks and the timer's rate in range.
`rows_problem` says why the table is damaged, or None."""

import re

import pyarrow as pa
import pyarrow.compute as pc

# A sample id holding a control or format character (RE2's Unicode classes).
CONTROL = r"[\p{Cc}\p{Cf}]"
OUTPUT_SHAPE = re.compile(r"^\w+\[([0-9, ]+)\]")
TIMINGS = ("microseconds", "instructions", "cycles")  # a sample's latency figures: finite, never below 0


def columns_to_check(names: list[str]) -> list[str]:
    """The columns of a samples table these checks read (the output bytes and flags are left unread)."""
    wanted = {"sample_id", "label", "ticks", "tick_hz", *TIMINGS}
    return [n for n in names if n in wanted or n.endswith("_prediction") or n.endswith("_score")]


def classes_of(summary, model_output: str | None) -> int | None:
    """How many classes the model tells apart (None where the run does not say, or the task is no
    classification): the confusion matrix's labels, else the last dimension of the model's output."""
    if not summary.facts.decides_samples:
        return None
    if summary.confusion is not None and summary.confusion.labels:
        return len(summary.confusion.labels)
    shape = OUTPUT_SHAPE.match(model_output or "")
    if not shape:
        return None
    outputs = int(shape.group(1).split(",")[-1])
    return max(outputs, 2)  # one output is a score thresholded into two classes


def rows_problem(table: pa.Table, classes: int | None) -> str | None:
    for check in (_ids_problem, _finite_problem, _timer_problem):
        problem = check(table)
        if problem:
            return problem
    return _classes_problem(table, classes)


def _ids_problem(table: pa.Table) -> str | None:
    if "sample_id" not in table.column_names:
        return None
    ids = table["sample_id"]
    if ids.null_count:
        return "column 'sample_id' holds an empty (null) id"
    if table.num_rows and pc.min(pc.utf8_length(ids)).as_py() == 0:
        return "column 'sample_id' holds an empty id"
    if pc.any(pc.match_substring_regex(ids, CONTROL)).as_py():
        return "column 'sample_id' holds an id with a control or format character"
    if pc.count_distinct(ids).as_py() != table.num_rows:
        counts = pc.value_counts(ids)
        twice = pc.filter(counts.field("values"), pc.greater(counts.field("counts"), 1))[0].as_py()
        return f"sample_id {twice!r} appears twice"
    return None


def _finite_problem(table: pa.Table) -> str | None:
    for name in table.column_names:
        if name.endswith("_score") and _not_finite(table[name]):
            return f"column {name!r} holds a score that is not a finite number"
    for name in (n for n in TIMINGS if n in table.column_names):
        row = _first_bad_latency(table[name])
        if row is not None:
            value = table[name][row].as_py()
            return f"column {name!r} row {row + 1} holds {value}; a latency is a finite number of at least 0"
    return None


def _first_bad_latency(column) -> int | None:
    """The index of the first latency that is not finite or below 0 (None where every one is good)."""
    bad = pc.less(column, 0)
    if pa.types.is_floating(column.type):
        bad = pc.or_(bad, pc.invert(pc.is_finite(column)))
    index = pc.index(pc.fill_null(bad, False), True).as_py()
    return None if index < 0 else index


def _not_finite(column) -> bool:
    return pa.types.is_floating(column.type) and bool(pc.any(pc.invert(pc.is_finite(column))).as_py())


def _timer_problem(table: pa.Table) -> str | None:
    for name, least in (("ticks", 0), ("tick_hz", 1)):
        if name in table.column_names and _below(table[name], least):
            return f"column {name!r} holds a value below {least}"
    return None


def _classes_problem(table: pa.Table, classes: int | None) -> str | None:
    """Labels and predictions within the model's classes; a run that is no classification (anomaly scores, an
    MLPerf Tiny DUT's own decisions, -1 for "no decision") has no classes to check them against."""
    if classes is None:
        return None
    for name in table.column_names:
        if name != "label" and not name.endswith("_prediction"):
            continue
        column = table[name]
        if not pa.types.is_integer(column.type):
            continue
        if _below(column, 0):
            return f"column {name!r} holds a class below 0"
        if column.length() > column.null_count and pc.max(column).as_py() >= classes:
            return f"column {name!r} holds class {pc.max(column).as_py()}; the model has {classes} classes"
    return None


def _below(column, least) -> bool:
    smallest = pc.min(column).as_py() if column.length() > column.null_count else None
    return smallest is not None and smallest < least
