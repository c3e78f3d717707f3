"""`harness` starts quickly: building the parser, and refusing a bad flag, imports none of the heavy packages.

Every command builds the whole parser first, and the test suite starts `python -m harness` a few hundred times
(the bad-input corpus alone some 200), so a heavy import at the top of the parser's modules costs each of them
(numpy, TFLM and pydantic together: most of a second). The handlers are imported when their command runs
(harness/cli/app.py names them as "module:function"); what the parser shows comes from harness/defaults.py.
No wall clock here: what is imported is what the checks are about.
"""

import argparse
import importlib

import pytest

from tests.import_probe import probe

# Packages the parser must not need: each costs tens to hundreds of milliseconds to import.
HEAVY = ("numpy", "tflite_micro", "ai_edge_litert", "pyarrow", "pydantic", "serial", "rich", "PIL", "scipy", "elftools")


def heavy_imported(argv: list[str]) -> list[str]:
    """The heavy packages loaded by a fresh interpreter that builds the parser and runs `harness ARGV`."""
    return probe(argv, HEAVY).heavy


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["--version"], id="version"),
        pytest.param(["eval", "--limit", "0"], id="eval-bad-number"),
        pytest.param(["eval", "--references", "tflm,nosuch"], id="eval-bad-reference"),
        pytest.param(["eval", "--faults", "drop=2"], id="eval-bad-faults"),
        pytest.param(["eval", "--protocol", "nosuch"], id="eval-bad-protocol"),
        pytest.param(["perf", "--window-seconds", "0"], id="perf-bad-window"),
        pytest.param(["firmware", "build"], id="build-without-board"),
        pytest.param(["build"], id="old-spelling-build-without-board"),
        pytest.param(["nosuch"], id="unknown-command"),
        pytest.param(["cache", "prune"], id="cache-prune-without-what"),
        pytest.param(["tflm", "prepare"], id="tflm-prepare-without-board"),
    ],
)
def test_refusing_a_command_line_imports_nothing_heavy(argv):
    assert heavy_imported(argv) == []


def test_every_handler_the_parser_names_exists():
    """A handler named as "module:function" is only imported when its command runs: check every one here."""
    from harness.cli.app import build_parser, handler_of

    def parsers(parser):
        yield parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    yield from parsers(sub)

    handlers = [p.get_default("handler") for p in parsers(build_parser()) if p.get_default("handler")]
    assert len(handlers) >= 30
    for handler in handlers:
        assert callable(handler_of(argparse.Namespace(handler=handler))), handler
        if isinstance(handler, str):
            assert handler.startswith("harness.cli."), handler


def test_the_light_names_match_their_owners():
    """harness/defaults.py repeats names the heavy modules own (as dict keys): they must agree."""
    from harness import defaults
    from harness.model.references import REFERENCES

    assert tuple(REFERENCES) == defaults.REFERENCE_NAMES
    assert set(defaults.DEFAULT_REFERENCES) <= set(REFERENCES)
    for owner, name in [
        ("harness.boards", "DEFAULT_BOARD"),
        ("harness.model.card_schema", "DEFAULT_MODEL"),
        ("harness.samples", "DEMO"),
        ("harness.model.references", "DEFAULT_REFERENCES"),
        ("harness.eval.sampling", "AUTO_POOL_SAMPLES"),
        ("harness.eval.perf_energy", "MLPERF_WINDOW_SECONDS"),
        ("harness.eval.convert", "DEFAULT_SPLIT_SEED"),
    ]:
        assert getattr(importlib.import_module(owner), name) == getattr(defaults, name), (owner, name)
