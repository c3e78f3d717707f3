"""Each card task is one registered implementation of `Task` (harness/eval/tasks.py), named for what it
does; the facts results needs are declared by the task and stored in the run's summary, so results tests
no task name; runs of earlier versions, which stored only the name, read theirs from it."""

from dataclasses import dataclass, replace
from pathlib import Path
from typing import ClassVar

import pytest

from harness.eval.outputs import NO_DECISION
from harness.eval.subsets import gate_subsets
from harness.eval.tasks import TASKS, ImageClassification, Task, register, task_for
from harness.model.cards import load_card
from harness.model.tasks import CARD_TASKS, CardTask
from harness.results.record import parse_summary
from harness.results.run_checks import eval_summary_problem
from harness.results.runs import Run
from harness.results.sample_checks import classes_of
from harness.results.summary import EvalSummary
from harness.results.task_facts import EARLIER_TASKS, TaskFacts

SUMMARY = {"subsets": {}, "latency": {"source": "sim"}, "arena": {"source": "sim"}, "samples": 4}


def test_every_card_task_has_one_registered_task_named_by_it():
    assert sorted(TASKS) == sorted(CARD_TASKS)
    for name, task in TASKS.items():
        assert task.name == name
    assert TASKS["image_classification"] is ImageClassification


@pytest.mark.parametrize("card", ["mlperf_tiny_vww", "mlperf_tiny_kws", "mlperf_tiny_ic01", "mlperf_tiny_ad01"])
def test_a_cards_task_is_a_task_declaring_the_facts_its_runs_were_read_with(card):
    task = task_for(load_card(card))
    assert isinstance(task, Task) and task.name == load_card(card).task
    assert task.facts == EARLIER_TASKS[task.name]  # a run of an earlier version reads as this task's runs


@dataclass(frozen=True)
class Toy:
    """A throwaway task: every output a score, no class decided."""

    name: ClassVar[str] = "toy_scores"
    facts: ClassVar[TaskFacts] = TaskFacts(decides_samples=False)
    confusion: ClassVar[bool] = False
    scores_files: ClassVar[bool] = False
    card: object

    def load_dataset(self, wanted):
        raise NotImplementedError

    def subsets(self, spec):
        return []

    def preparation(self, spec):
        raise NotImplementedError

    def predict(self, raw, spec):
        return NO_DECISION, float(raw[0])

    def class_name(self, subset):
        return "every file"


@pytest.fixture
def toy():
    CARD_TASKS[Toy.name] = CardTask(Toy.name, inputs="files")
    yield register(Toy)
    del TASKS[Toy.name], CARD_TASKS[Toy.name]


def test_only_a_declared_card_task_can_be_registered():
    with pytest.raises(ValueError, match=r"'toy_scores' is not a card task; declare it in harness/model/tasks\.py"):
        register(Toy)
    assert Toy.name not in TASKS


def test_a_registered_task_is_found_for_its_cards_and_results_read_its_facts(toy):
    task = task_for(replace(load_card("mlperf_tiny_ic01"), task="toy_scores"))
    assert isinstance(task, Toy) and isinstance(task, Task)
    assert task.predict(bytes([7]), None) == (NO_DECISION, 7.0)
    summary = parse_summary(SUMMARY | {"task": "toy_scores", "task_facts": {"decides_samples": False}})
    assert summary.facts == Toy.facts
    assert classes_of(summary, "output[1, 4]") is None  # no classes to check the predictions against
    assert eval_summary_problem(summary, finished=True) is None  # no subset scores, and none expected
    with pytest.raises(ValueError, match="registered twice"):
        register(Toy)


def test_the_facts_a_run_stores_decide_over_its_task_name():
    stored = parse_summary(SUMMARY | {"task": "image_classification", "task_facts": {"decides_samples": False}})
    assert classes_of(stored, "output[1, 2]") is None
    assert eval_summary_problem(stored, finished=True) is None
    earlier = parse_summary(SUMMARY | {"task": "image_classification"})
    assert earlier.task_facts is None and earlier.facts == TaskFacts(decides_samples=True, wake_vision=True)
    assert classes_of(earlier, "output[1, 2]") == 2
    assert "field 'subsets' is empty in a finished run" in eval_summary_problem(earlier, finished=True)


MANIFEST = {"run_id": "r", "started": "2026-12-03T11:00:00Z", "model": {"card": "c"}, "board": {"id": "sim"}}


def test_wake_vision_subsets_follow_the_fact_not_the_name():
    run = Run(Path("r"), MANIFEST, SUMMARY | {"task": "keyword_spotting"})
    assert gate_subsets(run) == ["all"]
    facts = {"decides_samples": True, "wake_vision": True}
    run = Run(Path("r"), MANIFEST, SUMMARY | {"task": "keyword_spotting", "task_facts": facts})
    assert "distance_far" in gate_subsets(run)


def test_a_summary_of_no_known_task_without_facts_is_damage():
    summary = EvalSummary(**{**parse_summary(SUMMARY).__dict__, "task": "toy_scores"})
    assert "field 'task_facts' is missing" in eval_summary_problem(summary, finished=False)
