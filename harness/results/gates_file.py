"""The gates file of `harness check`: which gates there are, what each takes, and reading one (docs/lab-ci.md).

A gate is a TOML table of bounds. Gates over subsets take a bound for every subset evaluated and/or
`[gate.SUBSET]` tables, a bound for that subset alone (it wins over the one for every subset)."""

from dataclasses import dataclass
from pathlib import Path

from harness import reading
from harness.errors import UserError

FRACTION = (0.0, 1.0)  # a share: accuracy, F1, agreement, AUC, recall, precision
CHANGE = (-1.0, 1.0)  # a change of a share, or a relative change: 0.02 for 2 points, 0.1 for 10 %
AT_LEAST_0 = (0.0, None)
ANY = (None, None)


Range = tuple[float | None, float | None]


@dataclass(frozen=True)
class Gate:
    settings: tuple[str, ...]
    kinds: tuple[str, ...]  # the kinds of run that have the gate's figure
    baseline: tuple[str, ...] = ()  # its settings that compare with a baseline run (given: the gate needs one)
    any_of: bool = False  # takes one or more of its settings (else every one)
    optional: tuple[str, ...] = ()  # settings never needed (a tolerance)
    per_subset: bool = False  # takes [gate.SUBSET] tables of its settings
    reference: bool = False  # compares the device with the primary host reference
    unit: str = ""  # of its bounds
    range: Range = FRACTION  # its bounds' lowest and highest (None: no limit)
    changes: tuple[str, ...] = ()  # settings that are relative changes (CHANGE, no unit) whatever the gate's unit

    def range_of(self, key: str) -> Range:
        if key == "tolerance":
            return AT_LEAST_0
        return CHANGE if key in self.changes else self.range

    def unit_of(self, key: str) -> str:
        return "" if key in self.changes or key == "tolerance" else self.unit

    def needs_baseline(self, settings: dict) -> bool:
        given = set(settings) | {key for bounds in settings.values() if isinstance(bounds, dict) for key in bounds}
        return bool(given & set(self.baseline))


EVAL = ("eval", "anomaly")
# How a device's latency may be counted (harness/results/judgeable.py), each a gate of its own; `tolerance`, the
# smallest relative change worth calling one, defaults to the figure's own for its source.
COUNTED = ("max_median", "max_p90", "max_regression", "tolerance")


def _counted(unit: str) -> Gate:
    return Gate(
        COUNTED, EVAL, ("max_regression",), any_of=True, optional=("tolerance",), unit=unit, range=AT_LEAST_0,
        changes=("max_regression",),
    )  # fmt: skip


# Kinds: eval (samples given a class), anomaly (eval runs of anomaly scores: AUC over files), stream.
GATES = {
    "agreement": Gate(("min",), ("eval", "stream"), reference=True),
    "accuracy": Gate(("min",), ("eval",), per_subset=True),
    "f1": Gate(("min",), ("eval",), per_subset=True),
    "accuracy_drop": Gate(("max",), ("eval",), per_subset=True, reference=True, range=CHANGE),
    "f1_drop": Gate(("max",), ("eval",), per_subset=True, reference=True, range=CHANGE),
    "accuracy_vs_baseline": Gate(("max_drop",), ("eval",), ("max_drop",), per_subset=True, range=CHANGE),
    "auc": Gate(("min",), ("anomaly",)),
    "auc_drop": Gate(("max",), ("anomaly",), range=CHANGE),
    "auc_vs_baseline": Gate(("max_drop",), ("anomaly",), ("max_drop",), range=CHANGE),
    "latency_ms": Gate(("max_median", "max_p90"), EVAL, any_of=True, unit="ms", range=AT_LEAST_0),
    "instructions": _counted("instructions"),
    "cycles": _counted("cycles"),
    "arena_bytes": Gate(("max",), EVAL, unit="bytes", range=AT_LEAST_0),
    "flash_bytes": Gate(("max",), EVAL, unit="bytes", range=AT_LEAST_0),
    "latency": Gate(("max_regression", "tolerance"), EVAL, ("max_regression",), optional=("tolerance",), range=CHANGE),
    "arena": Gate(("max_growth_bytes",), EVAL, ("max_growth_bytes",), unit="bytes", range=ANY),
    "flash": Gate(("max_growth_bytes",), EVAL, ("max_growth_bytes",), unit="bytes", range=ANY),
    "recall": Gate(("min",), ("stream",)),
    "precision": Gate(("min",), ("stream",)),
    "false_alarms_per_hour": Gate(("max",), ("stream",), range=AT_LEAST_0),
    "unwanted_triggers_per_hour": Gate(("max",), ("stream",), range=AT_LEAST_0),
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
