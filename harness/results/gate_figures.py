"""What the gates' judges share: where a run's device figures come from, and judging a figure per subset
against the bounds of a gate and of its [gate.SUBSET] tables."""

import dataclasses

from harness.results.runs import Run
from harness.results.summary import EvalSummary
from harness.results.verdicts import Part, Verdict
from harness.results.verdicts import judged as _judged
from harness.results.verdicts import not_judged as _not_judged


def device_source(run: Run) -> str:
    """Where the run's device figures come from, as its board is: device, emulated (QEMU) or sim."""
    summary = run.record.summary
    measured = summary.latency.source if isinstance(summary, EvalSummary) else summary.busy.source
    return run.record.manifest.board.latency_source or measured


def empty_subsets(summary: EvalSummary) -> dict[str, str]:
    return {subset: "n = 0" for subset, e in summary.subsets.items() if not e.n}


def shared_reasons(why: dict[str, str]) -> str:
    """Subsets and why each has no figure, a reason shared by several said once: "all, person (n = 0)"."""
    by_reason: dict[str, list[str]] = {}
    for subset, reason in why.items():
        by_reason.setdefault(reason, []).append(subset)
    return "; ".join(f"{', '.join(subsets)} ({reason})" for reason, subsets in by_reason.items())


def per_subset(
    settings: dict,
    key: str,
    values: dict[str, float | None],
    skipped: dict[str, str],
    source: str,
    which: dict[str, str] | None = None,
) -> Verdict:
    """Judges each subset with a value against its bound: its [gate.SUBSET] table's, else the gate's own for
    every subset. `skipped` names subsets without a value and why; `source` what the figures are (and whose);
    `which` names the figure judged where it differs by subset. Subsets without a value beside judged ones
    are named (those of a table of their own as unjudged); with none judged, not judged."""
    every = settings.get(key)
    own = {subset: bounds[key] for subset, bounds in settings.items() if isinstance(bounds, dict)}
    present = dict.fromkeys([*values, *skipped])
    names = [s for s in present if every is not None or s in own] + [s for s in own if s not in present]
    skipped = {subset: "not in this run" for subset in own if subset not in present} | skipped
    judged, failures, missing, parts = [], [], {}, []
    for subset in names:
        value = values.get(subset)
        bound = own.get(subset, every)
        bound_shown = f"{subset} {key} {bound:g}" if subset in own else f"{key} {bound:g}"
        if value is None:
            missing[subset] = skipped.get(subset, "no value")
            detail = f"not judged: {subset} ({missing[subset]}); {bound_shown}"
            parts.append(Part(subset, "not judged", "n/a", bound_shown, detail))
            continue
        figure = f"{subset} {value:.4f}" + (f" ({which[subset]})" if which and subset in which else "")
        judged.append(figure)
        failed = (value < bound) if key == "min" else (value > bound)
        failures += [subset] if failed else []
        part_figure = f"{source}: {figure}"
        status = "failed" if failed else "passed"
        parts.append(Part(subset, status, part_figure, bound_shown, f"{part_figure}; {bound_shown}"))
    not_judged = shared_reasons(missing)
    if not judged:
        return _not_judged(not_judged or "the run has no subsets")
    notes = [f"{'under' if key == 'min' else 'over'} the bound: {', '.join(failures)}"] if failures else []
    notes += [f"not judged: {not_judged}"] if missing else []
    verdict = _judged(not failures, f"{source}: {', '.join(judged)}", "; ".join(notes))
    unjudged = tuple(subset for subset in missing if subset in own)
    return dataclasses.replace(verdict, unjudged=unjudged, parts=tuple(parts))
