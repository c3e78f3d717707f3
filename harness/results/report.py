"""The per-subset tables printed at the end of a run."""

from pathlib import Path
from typing import TYPE_CHECKING

from rich.table import Table

from harness.console import percent, percent_interval, stdout_console
from harness.results.schema import parse
from harness.results.summary import Anomaly, AnomalyScore, Arena, Confusion, Energy, EvalSummary, SubsetResult

if TYPE_CHECKING:
    from rich.console import Console


def print_summary(summary: EvalSummary, run_dir: Path | str, console: "Console | None" = None) -> None:
    console = console or stdout_console()
    for table in summary_tables(summary):
        console.print(table)
    latency = summary.latency
    if latency.instructions:
        n = latency.instructions
        console.print(
            f"instructions per inference ({latency.source}, QEMU -icount): median {n.median:,.0f}, "
            f"min {n.min:,.0f}, max {n.max:,.0f}"
        )
    if latency.micros:
        m = latency.micros
        console.print(
            f"latency ({latency.source}): median {m.median / 1000:.2f} ms, "
            f"min {m.min / 1000:.2f} ms, max {m.max / 1000:.2f} ms per inference"
        )
    if summary.boards:
        console.print(_boards_table(summary))
    if summary.energy:
        console.print(energy_line(summary.energy), highlight=False)
    if summary.profile:
        console.print(f"operator profile: {summary.profile.headline()}", highlight=False)
    for trace in summary.layer_traces:
        console.print(f"layer trace: {trace.headline()}", highlight=False)
    console.print(arena_line(summary.arena), highlight=False)
    if summary.confusion:
        console.print(_confusion_table(summary.confusion))
    if summary.anomaly:
        console.print(_anomaly_table(summary.anomaly))
    for note in (pool_cost_note(summary.subsets), pool_note(summary.subsets)):
        if note:
            console.print(note, highlight=False)
    if primary := summary.primary_reference:
        exact = summary.bit_exact[primary]
        console.print(f"device output bytes equal {primary} host bytes for {exact} of {summary.samples} samples")
    for name, why in summary.references.refused.items():
        console.print(f"host reference {name} refused the model: {why}")
    unreadable = summary.unreadable_images
    if unreadable.count:
        first = ", ".join(sample_id for sample_id, _ in unreadable.first[:5])
        console.print(f"{unreadable.count} unreadable files skipped (first: {first}); --strict stops instead")
    if summary.model_caveat:
        console.print(f"caveat (model card): {summary.model_caveat}", highlight=False, markup=False)
    console.print(f"results: {run_dir}")


def summary_tables(summary: EvalSummary) -> list[Table]:
    """The device's scores per subset, then the device against the host references: two tables that fit 80
    columns (a subset's name is never wrapped), rather than one as wide as a terminal seldom is."""
    decided = summary.anomaly is None  # anomaly scores: no window gets a class, so no accuracy to show
    scores = Table(title=f"{summary.model} on {summary.board} — {summary.dataset_label}", title_justify="left")
    scores.add_column("subset", no_wrap=True)
    scores.add_column("n", justify="right", no_wrap=True)
    if decided:
        scores.add_column("device\nacc %", justify="right", no_wrap=True)
        scores.add_column("95 % CI\n(Wilson)", justify="right", no_wrap=True)
        scores.add_column("device\nF1 %", justify="right", no_wrap=True)
    rate_f1 = summary.facts.wake_vision
    if rate_f1:
        scores.add_column("device\nF1wv %", justify="right", no_wrap=True)
    for subset, entry in summary.subsets.items():
        device = entry.device
        row = [subset, str(entry.n)]
        if decided:
            row += [percent(device.accuracy), percent_interval(device.accuracy_ci95), percent(device.f1_counts)]
        if rate_f1:
            row.append(percent(device.f1_wv))
        scores.add_row(*row)
    tables = [scores]
    references = summary.references.used if decided else []
    primary = summary.primary_reference
    if references or primary:
        tables.append(_versus_table(summary, references, primary, decided))
    return tables


def _versus_table(summary: EvalSummary, references: list[str], primary: str | None, decided: bool) -> Table:
    table = Table(title="device against the host", title_justify="left")
    table.add_column("subset", no_wrap=True)
    for name in references:
        table.add_column(f"{name}\nacc %", justify="right", no_wrap=True)
    if primary:
        if decided:
            table.add_column(f"agree\n{primary} %", justify="right", no_wrap=True)
        unit = "steps" if decided else summary.output_diff_unit
        table.add_column(f"max Δ\n{unit}", justify="right", no_wrap=True)
    for subset, entry in summary.subsets.items():
        row = [subset, *(percent(entry.host[name].accuracy) for name in references)]
        if primary:
            versus = entry.versus[primary]
            steps = versus.max_diff_steps
            row += [percent(versus.agreement)] if decided else []
            row.append("n/a" if steps is None else f"{steps:g}")
        table.add_row(*row)
    return table


def pool_note(subsets: dict[str, SubsetResult], fix: str = "evaluate with --pools") -> str | None:
    """Why F1 is missing, in one line: the reason each Score keeps, said once for the subsets that share it (runs
    of earlier versions kept only "k of N", and then `fix` is said)."""
    by_reason: dict[str, list[str]] = {}
    for name, entry in subsets.items():
        device = entry.device
        if device.f1_unavailable:
            by_reason.setdefault(device.f1_unavailable, []).append(name)
        elif device.f1_unavailable is None and device.pool_incomplete:
            by_reason.setdefault(f"{device.pool_incomplete} of its negative pool evaluated; {fix}", []).append(name)
    missing = [f"{', '.join(names)}: {reason}" for reason, names in by_reason.items()]
    return f"F1 n/a — {'; '.join(missing)}" if missing else None


def pool_cost_note(subsets: dict[str, SubsetResult]) -> str | None:
    """What F1 cost: the samples each subset's negative pool added to the run."""
    added = [f"{name}'s negative pool adds {e.pool_added:,} samples" for name, e in subsets.items() if e.pool_added]
    if not added:
        return None
    return f"F1: {', '.join(added)} (--no-pools skips {'it' if len(added) == 1 else 'them'})"


def _boards_table(summary: EvalSummary) -> Table:
    """A run dealt over several boards: each one's samples and latency, and why one stopped early."""
    table = Table(title=f"{len(summary.boards)} boards", title_justify="left")
    for column in ("board", "samples", f"median latency ({summary.latency.source})", "resends", "stopped early"):
        table.add_column(column)
    for share in summary.boards:
        micros = share.latency.micros if share.latency else None
        table.add_row(
            share.name,
            str(share.samples),
            f"{micros.median / 1000:.2f} ms" if micros else "n/a",
            str(share.link.get("resends", 0)),
            share.failure or "",
        )
    return table


def _confusion_table(confusion: Confusion) -> Table:
    table = Table(title="device confusion: rows true, columns predicted", title_justify="left")
    table.add_column("")
    for label in confusion.labels:
        table.add_column(label, justify="right")
    for label, row in zip(confusion.labels, confusion.matrices["device"], strict=True):
        table.add_row(label, *(str(n) for n in row))
    return table


def anomaly_rows(anomaly: Anomaly) -> list[tuple[str, AnomalyScore]]:
    """The device's file-level figures, then each host reference's."""
    return [("device", anomaly.device), *anomaly.host.items()]


def _anomaly_table(anomaly: Anomaly) -> Table:
    table = Table(title="anomaly detection over files (mean of each file's windows)", title_justify="left")
    for column in ("source", "files (anomalous)", "windows", "AUC", "Top-1 %"):
        table.add_column(column, justify="left" if column == "source" else "right")
    for source, score in anomaly_rows(anomaly):
        auc = "n/a" if score.auc is None else f"{score.auc:.3f}"
        top1 = "n/a" if score.top1_percent is None else f"{score.top1_percent:.1f}"
        table.add_row(source, f"{score.files} ({score.anomalous_files})", str(score.windows), auc, top1)
    if anomaly.device.partial_files:
        table.caption = (
            f"{anomaly.device.partial_files} files left out: not every window of theirs was evaluated "
            "(a file's score is the mean of all its windows; drop --limit)"
        )
    return table


def arena_line(arena: Arena | dict) -> str:
    """`arena`: the record's, or as stored in summary.json."""
    arena = parse(Arena, arena)
    if not arena.used:
        return "arena: not reported by the DUT"
    configured = f" of {arena.configured:,}" if arena.configured else ""
    return f"arena ({arena.source}): {arena.used:,}{configured} bytes used"


def energy_line(energy: Energy) -> str:
    per = energy.uj_per_inference
    idle = f", idle {energy.idle_watts * 1000:.3f} mW" if energy.idle_watts is not None else ""
    median = f"median {per.median:,.1f} µJ per inference" if per.median is not None else "no inferences"
    streaming = f", {energy.streaming.joules:.4g} J while streaming" if energy.streaming else ""
    line = f"energy ({energy.source}, {energy.windows} windows, {energy.meter}): {median}{idle}{streaming}"
    coarse = energy.resolution.statement if energy.resolution else None
    return f"{line}\nwarning: {coarse}" if coarse else line
