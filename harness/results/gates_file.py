"""The gates file of `harness check`: which gates there are, what each takes, and reading one (docs/lab-ci.md).

A gate is a TOML table of bounds. Gates over subsets take a bound for every subset evaluated and/or
`[gate.SUBSET]` tables, a bound for that subset alone (it wins over the one for every subset)."""

import math
import tomllib
from dataclasses import dataclass
from pathlib import Path

from harness.errors import UserError


@dataclass(frozen=True)
class Gate:
    settings: tuple[str, ...]
    kinds: tuple[str, ...]  # the kinds of run that have the gate's figure
    baseline: bool = False  # compares with a baseline run
    any_of: bool = False  # takes one or more of its settings (else every one)
    per_subset: bool = False  # takes [gate.SUBSET] tables of its settings
    unit: str = ""  # of its bounds


# Kinds: eval (samples given a class), anomaly (eval runs of anomaly scores: AUC over files), stream.
GATES = {
    "agreement": Gate(("min",), ("eval", "stream")),
    "accuracy": Gate(("min",), ("eval",), per_subset=True),
    "f1": Gate(("min",), ("eval",), per_subset=True),
    "accuracy_drop": Gate(("max",), ("eval",), per_subset=True),
    "f1_drop": Gate(("max",), ("eval",), per_subset=True),
    "accuracy_vs_baseline": Gate(("max_drop",), ("eval",), baseline=True, per_subset=True),
    "auc": Gate(("min",), ("anomaly",)),
    "auc_drop": Gate(("max",), ("anomaly",)),
    "auc_vs_baseline": Gate(("max_drop",), ("anomaly",), baseline=True),
    "latency_ms": Gate(("max_median", "max_p90"), ("eval", "anomaly"), any_of=True, unit="ms"),
    "arena_bytes": Gate(("max",), ("eval", "anomaly"), unit="bytes"),
    "flash_bytes": Gate(("max",), ("eval", "anomaly"), unit="bytes"),
    "latency": Gate(("max_regression",), ("eval", "anomaly"), baseline=True),
    "arena": Gate(("max_growth_bytes",), ("eval", "anomaly"), baseline=True, unit="bytes"),
    "flash": Gate(("max_growth_bytes",), ("eval", "anomaly"), baseline=True, unit="bytes"),
    "recall": Gate(("min",), ("stream",)),
    "precision": Gate(("min",), ("stream",)),
    "false_alarms_per_hour": Gate(("max",), ("stream",)),
    "unwanted_triggers_per_hour": Gate(("max",), ("stream",)),
}
BASELINE_GATES = {name for name, gate in GATES.items() if gate.baseline}


def listed(kind: str | None = None) -> str:
    return ", ".join(
        f"[{name}] {'/'.join(gate.settings)}" for name, gate in GATES.items() if kind is None or kind in gate.kinds
    )


def load_gates(path: Path) -> dict:
    try:
        gates = tomllib.loads(Path(path).read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise UserError(f"cannot read gates file {path} ({exc}); see docs/lab-ci.md for its format") from exc
    if not gates:
        raise UserError(f"gates file {path} has no gates; add at least one, e.g. [agreement] min = 0.99")
    for name, settings in gates.items():
        if name not in GATES or not isinstance(settings, dict):
            raise UserError(f"gates file {path}: unknown gate [{name}]; valid: {listed()}")
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
    if gate.any_of and not bounds:
        raise UserError(
            f"gates file {path}: {where} needs one of {', '.join(f'`{k} = NUMBER`' for k in gate.settings)}"
        )
    for key in gate.settings:
        if key not in bounds:
            if gate.any_of:
                continue
            raise UserError(f"gates file {path}: {where} needs `{key} = NUMBER`{hint}")
        value = bounds[key]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise UserError(f"gates file {path}: {where} {key} must be a number, not {value!r}")
        if not math.isfinite(value):
            raise UserError(
                f"gates file {path}: {where} {key} must be a finite number, not {value}; a bound of {value} "
                "judges nothing"
            )


def bound_text(name: str, settings: dict) -> str:
    """The gate's bounds as given, with their unit: `min 0.9; distance_far min 0.8`."""
    gate = GATES[name]
    parts = [_bound(key, value, gate.unit) for key, value in settings.items() if not isinstance(value, dict)]
    for subset, bounds in settings.items():
        if isinstance(bounds, dict):
            parts += [f"{subset} {_bound(key, value, gate.unit)}" for key, value in bounds.items()]
    return "; ".join(parts)


def _bound(key: str, value: float, unit: str) -> str:
    if unit == "bytes":
        return f"{key} {value:,} bytes"
    return f"{key} {value:g}{' ' + unit if unit else ''}"
