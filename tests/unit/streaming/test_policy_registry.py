"""Scoring policies are one registry (harness/streaming/policies/): a policy registered there is scored by
`harness stream score`, by every stream run, and read back from the run record under its name; the record
of earlier versions, one field per policy, still reads."""

import json
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import ClassVar

import pydantic
import pytest

from harness.cli import main
from harness.cli.registry_names import RegistryNames
from harness.errors import UserError
from harness.results.schema import to_json
from harness.results.stream_scores import SCORE_TYPES, NotScorable, StreamScores, unregister_score_type
from harness.streaming.detections import Detection, Detections, write_detections
from harness.streaming.ledger import Event, Ledger
from harness.streaming.policies import Policy, policy, policy_names, register, unregister
from harness.streaming.run import _scores
from harness.streaming.scoring import score_stream


@dataclass
class NearScore:
    policy: str
    tolerance_ms: int
    near: int  # detections within the tolerance of an event's start, any label
    far: int

    COUNTS_AS: ClassVar[str] = "near / - / far"

    def counts(self) -> dict[str, int]:
        return {"correct": self.near, "missed": 0, "unwanted": self.far}


def _near(ledger: Ledger, detections: Detections, duration_ms: int, tolerance_ms: int | None, wakeword):
    starts = [e.start_ms for e in ledger.events]
    near = sum(1 for d in detections.detections if any(abs(d.time_ms - s) <= tolerance_ms for s in starts))
    return NearScore("near", tolerance_ms, near, len(detections.detections) - near)


@pytest.fixture
def near_policy():
    registered = register(Policy("near", "any detection near an event", 300, _near, NearScore))
    yield registered
    unregister("near")
    unregister_score_type("near")


LEDGER = Ledger("l.csv", "ms", (Event("yes", 1000, 1800), Event("no", 4000, 4700)))
FOUND = (Detection("yes", 1200, 0.9, "decision"), Detection("no", 4500, 0.8, "decision"))


def test_a_registered_policy_is_scored_under_its_default_tolerance(near_policy):
    detections = Detections("d.csv", "decision", FOUND)
    assert "near" in policy_names() and policy("near") is near_policy
    assert score_stream("near", LEDGER, detections, 10_000) == NearScore("near", 300, 1, 1)
    assert score_stream("near", LEDGER, detections, 10_000, 600) == NearScore("near", 600, 2, 0)
    with pytest.raises(UserError, match="must not be negative"):
        score_stream("near", LEDGER, detections, 10_000, -1)


def test_a_run_scores_a_registered_policy_and_its_record_reads_it_back(near_policy):
    request = SimpleNamespace(wav=Path("s.wav"), wakeword="yes", tolerance_ms=None)
    scores = _scores(request, LEDGER, list(FOUND), 10_000)
    assert list(scores) == [*policy_names()]
    assert scores["near"] == NearScore("near", 300, 1, 1)
    stored = json.loads(json.dumps(to_json(StreamScores.of(scores))))
    assert stored["near"] == {"policy": "near", "tolerance_ms": 300, "near": 1, "far": 1}
    assert StreamScores.model_validate(stored).by_policy() == scores


def test_the_cli_offers_and_scores_a_registered_policy(near_policy, tmp_path, capsys):
    assert list(RegistryNames("harness.streaming.policies:policy_names")) == list(policy_names())
    ledger, detections = tmp_path / "l.csv", tmp_path / "d.csv"
    ledger.write_text("yes,1000,1800\nno,4000,4700\n")
    write_detections(detections, list(FOUND))
    common = ["stream", "score", "--ledger", str(ledger), "--detections", str(detections), "--duration-ms", "10000"]
    assert main([*common, "--policy", "near", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"policy": "near", "tolerance_ms": 300, "near": 1, "far": 1}
    assert main([*common, "--policy", "near"]) == 0
    assert "near: 1 / 0 / 1 (near / - / far)" in capsys.readouterr().out
    with pytest.raises(SystemExit) as refused:
        main([*common, "--policy", "nosuch"])
    assert refused.value.code == 2
    assert "(choose from 'optimal', 'tf-compat', 'mlperf-sww', 'near')" in capsys.readouterr().err


def test_a_fixed_window_policy_refuses_a_tolerance():
    assert not policy("mlperf-sww").takes_tolerance
    with pytest.raises(UserError, match=r"mlperf-sww has a fixed window \(start to end \+ 1000 ms\)"):
        score_stream("mlperf-sww", LEDGER, Detections("d.csv", "decision", FOUND), 10_000, 500)
    with pytest.raises(UserError, match="unknown scoring policy 'nosuch'; valid: optimal, tf-compat, mlperf-sww"):
        score_stream("nosuch", LEDGER, Detections("d.csv", "decision", FOUND), 10_000)


def test_every_policy_is_the_record_s_type_for_its_name():
    assert policy_names()[:3] == ("optimal", "tf-compat", "mlperf-sww")
    for name in policy_names():
        assert SCORE_TYPES[name] is policy(name).score_type


def test_a_summary_of_an_earlier_version_reads_its_fields_as_policies():
    earlier = {"optimal": None, "tf_compat": {"not_scorable": "no lines"}, "mlperf_sww": None}
    assert StreamScores.model_validate(earlier).by_policy() == {"tf-compat": NotScorable(not_scorable="no lines")}


def test_a_score_under_no_known_policy_is_damage():
    with pytest.raises(pydantic.ValidationError, match="no scoring policy is named 'nosuch'"):
        StreamScores.model_validate({"nosuch": {"hits": 1}})
