"""The suite runs in parallel (pytest-xdist) from the README's test command, with its fixtures safe across
workers: a test file goes whole to one worker, so its module-scoped fixtures are made once and its tests run in
their own order (tests/conftest.py, docs/testing.md)."""

import os
import shlex
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


def _pytest_command() -> list[str]:
    lines = (REPO / "scripts" / "test").read_text().splitlines()
    found = [shlex.split(line) for line in lines if "-m pytest" in line and not line.lstrip().startswith("#")]
    assert len(found) == 1, found
    return found[0]


def test_the_readme_test_command_runs_the_suite_on_every_core_longest_groups_first():
    words = _pytest_command()
    assert "-n" in words and words[words.index("-n") + 1]  # a worker count (auto: one per core)
    assert words[words.index("--dist") + 1] == "loadfile"
    assert "--no-loadscope-reorder" in words  # the conftest's longest-first order, not xdist's by-count one


def test_pytest_xdist_is_in_the_test_extra():
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(requirement.startswith("pytest-xdist") for requirement in extras["test"])


@pytest.fixture(scope="module")
def first_worker(tmp_path_factory) -> str:
    """The worker that made this module's fixture first, written where every worker of the run can read it."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    root = tmp_path_factory.getbasetemp().parent if worker else tmp_path_factory.getbasetemp()
    marker = root / "test_parallel_suite.worker"
    try:
        with open(marker, "x") as out:
            out.write(worker or "main")
    except FileExistsError:
        pass
    return marker.read_text()


@pytest.mark.parametrize("index", range(8))
def test_a_module_runs_whole_on_the_worker_that_made_its_fixture(first_worker, index):
    assert first_worker == (os.environ.get("PYTEST_XDIST_WORKER") or "main"), "the module was split across workers"
