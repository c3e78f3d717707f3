"""What a gate kind of `harness runs check` is: the bounds its gates file table takes, and its judge for each
kind of run that has its figure. Every gate kind is one `Gate` in GATES (harness/results/gates_file.py)."""

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from harness.results.runs import Run
from harness.results.verdicts import Verdict

FRACTION = (0.0, 1.0)  # a share: accuracy, F1, agreement, AUC, recall, precision
CHANGE = (-1.0, 1.0)  # a change of a share, or a relative change: 0.02 for 2 points, 0.1 for 10 %
AT_LEAST_0 = (0.0, None)
ANY = (None, None)


Range = tuple[float | None, float | None]
# A gate's judge: its bounds as the gates file gives them, the run, and the baseline run (None without one; a
# gate whose settings compare with a baseline is judged only with one, harness/results/gates.py).
Judge = Callable[[dict, Run, "Run | None"], Verdict]

# Kinds of run: eval (samples given a class), anomaly (eval runs of anomaly scores: AUC over files), stream.
EVAL = ("eval", "anomaly")


def judged_on(kinds: tuple[str, ...], judge: Judge) -> dict[str, Judge]:
    """One judge for every kind of run in `kinds`."""
    return dict.fromkeys(kinds, judge)


@dataclass(frozen=True)
class Gate:
    settings: tuple[str, ...]
    # kind of run -> its judge: the kinds of run that have the gate's figure, each judged its own way
    judges: Mapping[str, Judge] = field(hash=False)
    baseline: tuple[str, ...] = ()  # its settings that compare with a baseline run (given: the gate needs one)
    any_of: bool = False  # takes one or more of its settings (else every one)
    optional: tuple[str, ...] = ()  # settings never needed (a tolerance)
    per_subset: bool = False  # takes [gate.SUBSET] tables of its settings
    reference: bool = False  # compares the device of an eval run with the primary host reference
    unit: str = ""  # of its bounds
    range: Range = FRACTION  # its bounds' lowest and highest (None: no limit)
    changes: tuple[str, ...] = ()  # settings that are relative changes (CHANGE, no unit) whatever the gate's unit

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(self.judges)

    def range_of(self, key: str) -> Range:
        if key == "tolerance":
            return AT_LEAST_0
        return CHANGE if key in self.changes else self.range

    def unit_of(self, key: str) -> str:
        return "" if key in self.changes or key == "tolerance" else self.unit

    def needs_baseline(self, settings: dict) -> bool:
        given = set(settings) | {key for bounds in settings.values() if isinstance(bounds, dict) for key in bounds}
        return bool(given & set(self.baseline))
