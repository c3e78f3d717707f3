"""The gates file of `harness runs check`: which gates there are (GATES, the one registry of gate kinds: what each
takes and its judges), and reading one (docs/lab-ci.md).

A gate is a TOML table of bounds. Gates over subsets take a bound for every subset evaluated and/or
`[gate.SUBSET]` tables, a bound for that subset alone (it wins over the one for every subset)."""

from pathlib import Path

from harness import reading
from harness.errors import UserError
from harness.results import bytes_gates, latency_gates, score_gates, stream_gates
from harness.results.gate_spec import ANY, AT_LEAST_0, CHANGE, EVAL, FRACTION, Gate, Judge, Range, judged_on

# How a device's latency may be counted (harness/results/judgeable.py), each a gate of its own; `tolerance`, the
# smallest relative change worth calling one, defaults to the figure's own for its source.
COUNTED = ("max_median", "max_p90", "max_regression", "tolerance")


def _counted(judge: Judge, unit: str) -> Gate:
    return Gate(
        COUNTED, judged_on(EVAL, judge), ("max_regression",), any_of=True, optional=("tolerance",), unit=unit,
        range=AT_LEAST_0, changes=("max_regression",),
    )  # fmt: skip


# Every gate kind, once: its settings and bounds, and its judge for each kind of run that has its figure
# (harness/results/gate_spec.py). A new gate kind is its judge in a module of judges and one line here.
GATES = {
    "agreement": Gate(("min",), {"eval": score_gates.agreement, "stream": stream_gates.agreement}, reference=True),
    "accuracy": Gate(("min",), {"eval": score_gates.accuracy}, per_subset=True),
    "f1": Gate(("min",), {"eval": score_gates.f1}, per_subset=True),
    "accuracy_drop": Gate(("max",), {"eval": score_gates.accuracy_drop}, per_subset=True, reference=True, range=CHANGE),
    "f1_drop": Gate(("max",), {"eval": score_gates.f1_drop}, per_subset=True, reference=True, range=CHANGE),
    "accuracy_vs_baseline": Gate(
        ("max_drop",), {"eval": score_gates.accuracy_vs_baseline}, ("max_drop",), per_subset=True, range=CHANGE
    ),
    "auc": Gate(("min",), {"anomaly": score_gates.auc}),
    "auc_drop": Gate(("max",), {"anomaly": score_gates.auc_drop}, range=CHANGE),
    "auc_vs_baseline": Gate(("max_drop",), {"anomaly": score_gates.auc_vs_baseline}, ("max_drop",), range=CHANGE),
    "latency_ms": Gate(
        ("max_median", "max_p90"), judged_on(EVAL, latency_gates.latency_ms), any_of=True, unit="ms", range=AT_LEAST_0
    ),
    "instructions": _counted(latency_gates.instructions, "instructions"),
    "cycles": _counted(latency_gates.cycles, "cycles"),
    "arena_bytes": Gate(("max",), judged_on(EVAL, bytes_gates.arena_bytes), unit="bytes", range=AT_LEAST_0),
    "flash_bytes": Gate(("max",), judged_on(EVAL, bytes_gates.flash_bytes), unit="bytes", range=AT_LEAST_0),
    "latency": Gate(
        ("max_regression", "tolerance"),
        judged_on(EVAL, latency_gates.latency),
        ("max_regression",),
        optional=("tolerance",),
        range=CHANGE,
    ),
    "arena": Gate(
        ("max_growth_bytes",), judged_on(EVAL, bytes_gates.arena), ("max_growth_bytes",), unit="bytes", range=ANY
    ),
    "flash": Gate(
        ("max_growth_bytes",), judged_on(EVAL, bytes_gates.flash), ("max_growth_bytes",), unit="bytes", range=ANY
    ),
    "recall": Gate(("min",), {"stream": stream_gates.recall}),
    "precision": Gate(("min",), {"stream": stream_gates.precision}),
    "false_alarms_per_hour": Gate(("max",), {"stream": stream_gates.false_alarms_per_hour}, range=AT_LEAST_0),
    "unwanted_triggers_per_hour": Gate(("max",), {"stream": stream_gates.unwanted_triggers_per_hour}, range=AT_LEAST_0),
}


def listed(kind: str | None = None) -> str:
    return ", ".join(
        f"[{name}] {'/'.join(gate.settings)}" for name, gate in GATES.items() if kind is None or kind in gate.kinds
    )


def load_gates(path: Path) -> dict:
    """The gates file, read as harness/reading.py reads every file (a regular file of at most 1 MiB, UTF-8
    TOML nesting at most 32 deep, no NaN nor huge integers), each gate checked: known, its settings known,
    every bound a finite number in the gate's range."""
    try:
        gates = reading.read_toml(path, reading.GATES)
    except UserError as exc:
        raise UserError(f"{exc}; see docs/lab-ci.md for its format") from None
    if not gates:
        raise UserError(f"gates file {path} has no gates; add at least one, e.g. [agreement] min = 0.99")
    for name, settings in gates.items():
        if name not in GATES:
            raise UserError(f"gates file {path}: unknown gate [{name}]; valid: {listed()}")
        if not isinstance(settings, dict):
            raise UserError(f"gates file {path}: {name} = {settings!r} is no table; write [{name}] and its bounds")
        _check_gate(path, name, settings)
    return gates


def _check_gate(path: Path, name: str, settings: dict) -> None:
    gate = GATES[name]
    subsets = {key: value for key, value in settings.items() if gate.per_subset and isinstance(value, dict)}
    bounds = {key: value for key, value in settings.items() if key not in subsets}
    takes = ", ".join(gate.settings) + (f" or [{name}.SUBSET] tables of them" if gate.per_subset else "")
    if unknown := sorted(set(bounds) - set(gate.settings)):
        raise UserError(f"gates file {path}: [{name}] has no setting {', '.join(unknown)}; it takes {takes}")
    hint = f" (or [{name}.SUBSET] tables of it)" if gate.per_subset else ""
    _check_bounds(path, f"[{name}]", gate, bounds, optional=bool(subsets), hint=hint)
    for subset, subset_bounds in subsets.items():
        where = f"[{name}.{subset}]"
        if unknown := sorted(set(subset_bounds) - set(gate.settings)):
            raise UserError(
                f"gates file {path}: {where} has no setting {', '.join(unknown)}; it takes {', '.join(gate.settings)}"
            )
        _check_bounds(path, where, gate, subset_bounds, optional=False)


def _check_bounds(path: Path, where: str, gate: Gate, bounds: dict, optional: bool, hint: str = "") -> None:
    """`optional`: the gate's bounds are in its subset tables, none needed here."""
    if not bounds and optional:
        return
    needed = [key for key in gate.settings if key not in gate.optional]
    if gate.any_of and not set(bounds) & set(needed):
        raise UserError(f"gates file {path}: {where} needs one of {', '.join(f'`{k} = NUMBER`' for k in needed)}")
    for key in gate.settings:
        if key not in bounds:
            if gate.any_of or key in gate.optional:
                continue
            raise UserError(f"gates file {path}: {where} needs `{key} = NUMBER`{hint}")
        value = bounds[key]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise UserError(f"gates file {path}: {where} {key} must be a number, not {value!r}")
        _check_range(path, where, key, value, gate.range_of(key))


def _check_range(path: Path, where: str, key: str, value: float, bounds: Range) -> None:
    """A bound within its gate's range (harness/reading.py has refused NaN and infinities already)."""
    low, high = bounds
    if (low is None or value >= low) and (high is None or value <= high):
        return
    if bounds == FRACTION:
        hint = "bounds are fractions from 0 to 1 (0.9 for 90 %)"
    elif bounds == CHANGE:
        hint = "bounds are fractions from -1 to 1 (0.02 for 2 points or 2 %)"
    else:
        hint = f"it must be at least {low:g}"
    raise UserError(f"gates file {path}: {where} {key} = {value:g} is out of range; {hint}")


def bound_text(name: str, settings: dict) -> str:
    """The gate's bounds as given, with their unit: `min 0.9; distance_far min 0.8`."""
    gate = GATES[name]
    parts = [_bound(key, value, gate.unit_of(key)) for key, value in settings.items() if not isinstance(value, dict)]
    for subset, bounds in settings.items():
        if isinstance(bounds, dict):
            parts += [f"{subset} {_bound(key, value, gate.unit_of(key))}" for key, value in bounds.items()]
    return "; ".join(parts)


def _bound(key: str, value: float, unit: str) -> str:
    if unit in ("bytes", "instructions", "cycles"):  # counts: whole numbers, grouped
        return f"{key} {int(value) if float(value).is_integer() else value:,} {unit}"
    return f"{key} {value:g}{' ' + unit if unit else ''}"
