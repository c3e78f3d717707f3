"""The suite runs in parallel (pytest-xdist) from the README's test command, with its fixtures safe across
workers: tests that share a module-scoped fixture go to one worker (tests/conftest.py, docs/testing.md)."""

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
    assert words[words.index("--dist") + 1] == "loadgroup"
    assert "--no-loadscope-reorder" in words  # the conftest's longest-first order, not xdist's by-count one


def test_pytest_xdist_is_in_the_test_extra():
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(requirement.startswith("pytest-xdist") for requirement in extras["test"])


@pytest.fixture(scope="module")
def made_once_a_module():
    return object()


def test_a_test_sharing_a_module_fixture_is_grouped_by_its_module(request, made_once_a_module):
    group = request.node.get_closest_marker("xdist_group")
    assert group is not None and group.args == ("tests/unit/architecture/test_parallel_suite.py",)


def test_a_test_without_one_goes_to_any_worker(request):
    assert request.node.get_closest_marker("xdist_group") is None
