"""Scoring detections against an event ledger under one declared policy: each policy is a module of
harness/streaming/policies/ (optimal, tf-compat, mlperf-sww), found by its name in that package's registry."""

from harness.errors import UserError, setting
from harness.streaming.detections import Detections
from harness.streaming.ledger import Ledger
from harness.streaming.policies import policy as policy_named


def score_stream(
    policy: str,
    ledger: Ledger,
    detections: Detections,
    duration_ms: int,
    tolerance_ms: int | None = None,
    wakeword: str | None = None,
):
    """The policy's score (its type: harness/results/stream_scores.py, or the policy's own)."""
    chosen = policy_named(policy)
    if tolerance_ms is not None and tolerance_ms < 0:
        raise UserError(f"{setting('tolerance_ms')} must not be negative (got {tolerance_ms})")
    if not chosen.takes_tolerance:
        if tolerance_ms is not None:
            raise UserError(f"{chosen.name} has a fixed window ({chosen.fixed_window}); drop {setting('tolerance_ms')}")
        return chosen.score(ledger, detections, duration_ms, None, wakeword)
    tolerance = chosen.default_tolerance_ms if tolerance_ms is None else tolerance_ms
    return chosen.score(ledger, detections, duration_ms, tolerance, wakeword)
