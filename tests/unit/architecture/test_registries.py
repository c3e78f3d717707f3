"""Each family of variants has one registry, and it is the only list of its names: every module of harness/ is
read with ast, and outside a family's home modules neither a literal collection of its names (a tuple, list or
set, or a dict's keys, holding two or more of them and no other word) nor an `==`/`!=` test against one of its
names may appear. A name that is also a word of another vocabulary (a figure's source, a latency unit) is
allowed where OTHER_WORDS says which vocabulary it is there."""

import ast
from collections.abc import Callable
from pathlib import Path

import pytest

HARNESS = Path(__file__).resolve().parents[3] / "harness"


def _policies() -> set[str]:
    from harness.streaming.policies import policy_names

    return set(policy_names())


def _gates() -> set[str]:
    from harness.results.gates_file import GATES

    return set(GATES)


def _protocols() -> set[str]:
    from harness.link.registry import PROTOCOLS

    return set(PROTOCOLS)


def _board_kinds() -> set[str]:
    from harness.boards import BOARD_KINDS
    from harness.device.drivers import DRIVERS

    return set(BOARD_KINDS) | set(DRIVERS)


def _tasks() -> set[str]:
    from harness.model.tasks import CARD_TASKS  # each has one registered Task (tests/unit/eval/test_task_registry.py)

    return set(CARD_TASKS)


# family: (its names, its home modules: a file, or a folder for every module in it)
FAMILIES: dict[str, tuple[Callable[[], set[str]], tuple[str, ...]]] = {
    # results/stream_scores.py reads stored scores by policy name without the streaming package above it
    "scoring policy": (_policies, ("streaming/policies", "results/stream_scores.py")),
    "gate": (_gates, ("results/gates_file.py", "results/gates.py", "results/latency_gates.py")),
    "protocol": (_protocols, ("link/registry.py",)),
    "board kind": (_board_kinds, ("boards.py", "device/drivers")),
    # results/task_facts.py: the facts of the tasks of earlier versions' runs, frozen (a new task is never added)
    "task": (_tasks, ("model/tasks.py", "eval/tasks.py", "results/task_facts.py")),
}

# (module, name): the other vocabulary the name is a word of in that module
OTHER_WORDS = {
    ("device/selftest.py", "instructions"): "a latency figure's unit",
    ("eval/perf_energy.py", "device"): "a figure's source",
    ("results/plots.py", "device"): "the device's scores beside the host references'",
}


def leftovers(source: str, names: set[str]) -> list[tuple[int, str]]:
    """(line, name) of each literal collection of `names` and each `==`/`!=` test against one of them."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Tuple | ast.List | ast.Set | ast.Dict):
            items = node.keys if isinstance(node, ast.Dict) else node.elts
            words = {e.value for e in items if isinstance(e, ast.Constant) and isinstance(e.value, str)}
            if len(words & names) >= 2 and words <= names:
                found += [(node.lineno, word) for word in sorted(words)]
        elif isinstance(node, ast.Compare) and any(isinstance(op, ast.Eq | ast.NotEq) for op in node.ops):
            operands = [node.left, *node.comparators]
            found += [(node.lineno, o.value) for o in operands if isinstance(o, ast.Constant) and o.value in names]
    return found


def test_the_reader_finds_lists_and_tests_of_a_familys_names():
    source = """
ALL = ("optimal", "tf-compat")
SCORES = {"optimal": 1, "mlperf-sww": 2}
if policy == "mlperf-sww": pass
if "optimal" != name: pass
ONE = ("optimal",)
OTHER = ("optimal", "tf-compat", "sim")
fine = policy in POLICIES or name == "other"
"""
    names = {"optimal", "tf-compat", "mlperf-sww"}
    assert sorted({line for line, _ in leftovers(source, names)}) == [2, 3, 4, 5]


def _home(path: Path, homes: tuple[str, ...]) -> bool:
    return any(path == HARNESS / home or HARNESS / home in path.parents for home in homes)


@pytest.mark.parametrize("family", FAMILIES)
def test_a_familys_registry_is_the_only_list_of_its_names(family):
    names_of, homes = FAMILIES[family]
    names = names_of()
    assert len(names) >= 2, names
    assert all((HARNESS / home).exists() for home in homes), homes
    found = [
        f"{where}:{line} {name!r}"
        for path in sorted(HARNESS.rglob("*.py"))
        if not _home(path, homes)
        for where in [path.relative_to(HARNESS).as_posix()]
        for line, name in leftovers(path.read_text(), names)
        if (where, name) not in OTHER_WORDS
    ]
    assert not found, (
        f"{family} names listed or tested outside {', '.join(homes)}: derive the list from the registry or put "
        f"the fact on the {family} itself: {'; '.join(found)}"
    )


def test_every_other_word_is_still_used():
    """An OTHER_WORDS entry whose module no longer says the name is stale: remove it."""
    every = set().union(*(names_of() for names_of, _ in FAMILIES.values()))
    for where, name in OTHER_WORDS:
        assert any(n == name for _, n in leftovers((HARNESS / where).read_text(), every)), (where, name)
