"""The latency gates of `harness runs check`: ceilings on the device's latency in each figure a board gives
(`latency_ms` timed, `instructions` counted under QEMU -icount, `cycles` from a board's cycle counter) and the
median's change against a baseline (`latency` in the figure both runs have, or `instructions` or `cycles`
alone), each change judged with the tolerance harness/results/judgeable.py declares for its figure and source,
or the gate's own `tolerance`."""

from harness.results import judgeable
from harness.results.runs import Run
from harness.results.summary import Latency
from harness.results.verdicts import Verdict, combined, judged, not_judged

CEILINGS = (("max_median", "median"), ("max_p90", "p90"))
GATE_OF = {"instructions": "[instructions] max_median", "cycles": "[cycles] max_median", "micros": "[latency_ms]"}
SHOWN = {  # a figure's unit in a gate's line, and how many of it are one: ms for µs
    "instructions": ("instructions", 1.0, ",.0f"),
    "cycles": ("cycles", 1.0, ",.0f"),
    "micros": ("ms", 1e-3, ",.3f"),
}


def _has(latency: Latency) -> str:
    return ", ".join(judgeable.UNITS[name] for name in judgeable.figures(latency)) or "none"


def _ceilings(figure: str, settings: dict, latency: Latency) -> Verdict | None:
    """The median and/or p90 of `figure` against the gate's ceilings (None: it gives none)."""
    keys = [(key, stat) for key, stat in CEILINGS if key in settings]
    if not keys:
        return None
    unit, scale, form = SHOWN[figure]
    stats = getattr(latency, figure)
    if stats is None:
        gates = " or ".join(GATE_OF[name] for name in judgeable.figures(latency))
        return not_judged(
            f"no latency in {unit} in this run ({latency.source} latency: {_has(latency)})"
            + (f"; gate it with {gates}" if gates else "")
        )
    shown, failures = [], []
    for key, stat in keys:
        value = getattr(stats, stat)
        if value is None:
            return not_judged(f"the run's latency has no {stat} (a record of an earlier version)")
        shown.append(f"{stat} {value * scale:{form}} {unit}")
        failures += [stat] if value * scale > settings[key] else []
    figure_text = f"{', '.join(shown)} ({judgeable.described(figure, latency.source)})"
    return judged(not failures, figure_text, f"over the bound: {', '.join(failures)}" if failures else "")


def _regression(name: str, settings: dict, run: Run, baseline: Run, figures: tuple[str, ...]) -> Verdict:
    """The median's relative change against the baseline in the first of `figures` both runs have: failed when
    it exceeds max_regression and the tolerance; not judged without a tolerance for the figure and source."""
    now, before = run.eval_summary.latency, baseline.eval_summary.latency
    if now.source != before.source:
        return not_judged(f"not comparable: {now.source} latency against the baseline's {before.source}")
    both = [f for f in figures if getattr(now, f) and getattr(before, f) and getattr(before, f).median]
    if not both:
        which = "latency figure" if len(figures) > 1 else judgeable.UNITS[figures[0]]
        return not_judged(f"not comparable: no {now.source} {which} both runs have")
    figure = both[0]
    tolerance = judgeable.tolerance(figure, (now.source,), settings.get("tolerance"))
    if tolerance is None:
        return not_judged(judgeable.why_not_judged(figure, now.source, f"give [{name}] tolerance, e.g. 0.1"))
    current, previous = getattr(now, figure).median, getattr(before, figure).median
    change = current / previous - 1
    own = tolerance and "tolerance" not in settings  # a tolerance given is shown with the bounds
    within = f"; tolerance {tolerance * 100:g}% ({now.source} {judgeable.UNITS[figure]})" if own else ""
    text = f"median {previous:,.1f} -> {current:,.1f} {judgeable.UNITS[figure]} ({now.source}), {change:+.2%}{within}"
    note = "within the tolerance" if settings["max_regression"] < change <= tolerance else ""
    return judged(change <= max(settings["max_regression"], tolerance), text, note)


def latency_ms(settings: dict, run: Run, baseline: Run | None) -> Verdict:
    return _ceilings("micros", settings, run.eval_summary.latency)


def latency(settings: dict, run: Run, baseline: Run) -> Verdict:
    return _regression("latency", settings, run, baseline, judgeable.FIGURES)


def counted(figure: str):
    """The judge of a gate on one figure (instructions, cycles): its ceilings and/or its change."""

    def judge(settings: dict, run: Run, baseline: Run | None) -> Verdict:
        verdicts = [_ceilings(figure, settings, run.eval_summary.latency)]
        if "max_regression" in settings:
            verdicts.append(_regression(figure, settings, run, baseline, (figure,)))
        return combined([v for v in verdicts if v is not None])

    return judge


instructions = counted("instructions")
cycles = counted("cycles")
