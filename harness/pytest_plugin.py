"""harness's pytest plugin (entry point `pytest11`; without the installed package: `-p harness.pytest_plugin`):
benchmark gates written as tests, in the style of pytest-embedded's `dut` and labgrid's `target`.

Options (group "harness"): --harness-board NAME (default sim, the virtual board; qemu_m7 a QEMU board; a
real board's file with one of:) --harness-port PORT_OR_URL, --harness-labgrid-place NAME; --harness-tflm,
--harness-results DIR (default: a folder in pytest's temporary directory). Fixtures:

- `harness_board` (session): the board the options name, opened with harness.open_board; a test module may
  name another with `@pytest.mark.parametrize("harness_board", ["qemu_m7"], indirect=True)` (a name, or a
  dict of open_board's keywords);
- `harness_eval` (function): a callable `harness_eval(model=…, dataset=…, subsets=…, **settings)` that runs
  an eval on the board and returns the EvalRun; each run's id, board, model, accuracy per subset and median
  latency are attached to the JUnit report: as the test's properties, or under junit_family xunit2 (pytest's
  default, whose testcases hold no properties) as the suite's, named `<test id>::<property>`;
- `harness_results`: the folder runs are written to.

A figure of a run (`run.accuracy("distance_far")`, `run.f1(…)`, `run.agreement(…)`, `run.latency()` in the
most exact unit the board gives: ms, QEMU's instructions or a board's cycles; `run.latency_ms()`,
`run.instructions()`, `run.cycles()`) compares with a number, so a gate is a plain assert; a failing one is
worded with the figure, its source, its 95 % interval and n. This module is imported by every pytest session
once harness is installed: it imports harness's internals only inside its fixtures and hooks."""

from pathlib import Path

from harness.extras import require

pytest = require("pytest", "harness's pytest plugin")


def pytest_addoption(parser) -> None:
    """The --harness-* options (group "harness")."""
    group = parser.getgroup("harness", "harness: TinyML benchmarks on boards")
    group.addoption("--harness-board", default="sim", help="board file id or path (default: sim, the virtual board)")
    group.addoption("--harness-port", help="a real board's serial device or pyserial URL (rfc2217://, socket://)")
    group.addoption("--harness-serial", help="with several boards of a kind attached: the USB serial number")
    group.addoption("--harness-labgrid-place", help="a real board in a labgrid farm: the place to acquire")
    group.addoption("--harness-tflm", help="TFLM tree for QEMU firmware builds (default: the board's)")
    group.addoption("--harness-results", help="folder for the run folders (default: in pytest's temporary folder)")


def _board_keywords(config, param) -> dict:
    """open_board's keywords: the options', or a test's indirect parameter (a board name or a dict)."""
    keywords = {
        "name": config.getoption("harness_board"),
        "port": config.getoption("harness_port"),
        "serial": config.getoption("harness_serial"),
        "labgrid_place": config.getoption("harness_labgrid_place"),
        "tflm": config.getoption("harness_tflm"),
    }
    if isinstance(param, str):
        return {"name": param}
    if isinstance(param, dict):
        return dict(param)
    return {name: value for name, value in keywords.items() if value is not None}


@pytest.fixture(scope="session")
def harness_results(request, tmp_path_factory) -> Path:
    """The folder the session's runs are written to (--harness-results, else a temporary one)."""
    given = request.config.getoption("harness_results")
    if given:
        Path(given).mkdir(parents=True, exist_ok=True)
        return Path(given)
    return tmp_path_factory.mktemp("harness-results")


@pytest.fixture(scope="session")
def harness_board(request, record_testsuite_property):
    """The board to run on (harness.open_board), checked once for the session; a bad option fails the
    tests that use it with harness's one-line reason."""
    from harness.api.board import open_board
    from harness.errors import WordedError

    keywords = _board_keywords(request.config, getattr(request, "param", None))
    try:
        board = open_board(**keywords)
    except WordedError as exc:
        pytest.fail(f"harness: {exc}", pytrace=False)
    record_testsuite_property("harness_board", board.name)
    with board:
        yield board


@pytest.fixture
def harness_eval(request, harness_board, harness_results, record_testsuite_property):
    """A callable that evaluates on `harness_board` and returns the EvalRun (harness.api.board.Board.evaluate's
    keywords; runs go to `harness_results`). Each run's figures are attached to the test's JUnit record."""
    record = _property_recorder(request, record_testsuite_property)

    def run_eval(*args, **settings):
        settings.setdefault("results", harness_results)
        run = harness_board.evaluate(*args, **settings)
        for name, value in junit_properties(run).items():
            record(name, value)
        return run

    return run_eval


def _property_recorder(request, record_testsuite_property):
    """record(name, value) for the test: its user_properties (a testcase's properties in the JUnit report,
    and what other reporters read), except when pytest writes JUnit xunit2, whose schema has none in a
    testcase (record_property warns there): then a property of the suite, named after the test."""
    config = request.config
    if config.getoption("xmlpath", None) and config.getini("junit_family") not in ("legacy", "xunit1"):
        node = request.node.nodeid
        return lambda name, value: record_testsuite_property(f"{node}::{name}", value)
    return lambda name, value: request.node.user_properties.append((name, value))


def junit_properties(run) -> dict[str, str]:
    """What a run adds to the JUnit report: its id, folder, board, model, per-subset accuracy with its
    interval and n, and the median latency in the board's most exact unit with its source."""
    properties = {
        "harness_run_id": run.id,
        "harness_run_dir": str(run.path),
        "harness_board": run.board,
        "harness_model": run.model,
    }
    for subset in run.summary.subsets:
        properties[f"harness_accuracy_{subset}"] = run.accuracy(subset).measured()
    properties["harness_latency_median"] = run.latency("median").measured()
    return properties


def pytest_assertrepr_compare(config, op, left, right):
    """A failed comparison of a run's figure with a bound, worded with the figure (harness/api/figures.py)."""
    from harness.api.figures import explain

    return explain(op, left, right)
