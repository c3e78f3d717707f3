"""What a stream scoring policy is, and the one registry every list of policies derives from (`harness stream
score --policy`, the policies a `harness stream` run is scored under, the record's score types)."""

from collections.abc import Callable
from dataclasses import dataclass

from harness.errors import UserError
from harness.results.stream_scores import register_score_type
from harness.streaming.detections import Detections
from harness.streaming.ledger import Ledger

SILENCE = "_silence_"
NON_COMMAND_LABELS = frozenset({SILENCE, "_unknown_"})  # no action follows them
MS_PER_HOUR = 3_600_000

# (ledger, detections, duration_ms, tolerance_ms, wakeword) -> the policy's score (harness/results/stream_scores.py)
Score = Callable[[Ledger, Detections, int, int | None, str | None], object]


@dataclass(frozen=True)
class Policy:
    name: str
    summary: str  # what it is, one line (the --policy help)
    default_tolerance_ms: int | None  # None: a fixed window, and a tolerance given is refused
    score: Score
    score_type: type  # what `score` returns; the run record reads it back by the policy's name
    fixed_window: str = ""  # with no tolerance: the window, as the refusal of a tolerance names it

    @property
    def takes_tolerance(self) -> bool:
        return self.default_tolerance_ms is not None


_POLICIES: dict[str, Policy] = {}


def register(policy: Policy) -> Policy:
    if policy.name in _POLICIES and _POLICIES[policy.name] != policy:
        raise ValueError(f"scoring policy {policy.name!r} is registered twice")
    _POLICIES[policy.name] = policy
    register_score_type(policy.name, policy.score_type)
    return policy


def unregister(name: str) -> None:
    _POLICIES.pop(name, None)


def policy_names() -> tuple[str, ...]:
    return tuple(_POLICIES)


def policy(name: str) -> Policy:
    try:
        return _POLICIES[name]
    except KeyError:
        raise UserError(f"unknown scoring policy {name!r}; valid: {', '.join(_POLICIES)}") from None


def per_hour(count: int, duration_ms: int) -> float | None:
    return count * MS_PER_HOUR / duration_ms if duration_ms > 0 else None


def share(part: int, whole: int) -> float | None:
    return part / whole if whole else None
