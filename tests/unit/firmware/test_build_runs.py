"""Firmware builds as the user sees them: what is built and how long a first build takes, files counted as
they compile, and a failure or a hang named as a build failure with its log."""

import sys

import pytest

from harness import console
from harness.errors import BuildError
from harness.firmware.build_runs import run_build


def _script(tmp_path, body: str) -> list[str]:
    path = tmp_path / "build.py"
    path.write_text(body)
    return [sys.executable, str(path)]


def _build(command, tmp_path, what="the lib", sources=1, timeout=60) -> None:
    run_build(
        command,
        tmp_path,
        tmp_path / "log",
        what=what,
        label="lib",
        sources=sources,
        compile_markers=("cc ",),
        timeout=timeout,
    )


def test_a_build_says_what_it_builds_and_counts_files(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CI", "1")  # plain progress lines, as in a log
    command = _script(tmp_path, "for i in range(20): print(f'cc -c file{i}.c')\n")
    _build(command, tmp_path, what="the test library", sources=20)
    err = capsys.readouterr().err
    assert "harness: building the test library: 20 source files (a first build takes " in err
    assert "lib: 20/20 (100%), " in err and " files/s, eta 0:00:00" in err
    assert (tmp_path / "log").read_text().count("cc -c") == 20


def test_a_quiet_build_says_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CI", "1")
    command = _script(tmp_path, "print('cc -c a.c')\n")
    with console.quieted():
        _build(command, tmp_path)
    assert capsys.readouterr().err == ""
    assert (tmp_path / "log").read_text().count("cc -c") == 1


def test_a_failure_is_a_build_failure_naming_the_first_error_and_the_log(tmp_path):
    command = _script(tmp_path, "print('cc -c a.c'); print('a.c:3: error: expected ;'); raise SystemExit(2)\n")
    with pytest.raises(BuildError, match=r"build failure: the lib did not build \(a\.c:3: error: expected ;\); log: "):
        _build(command, tmp_path)


@pytest.mark.slow
def test_a_hang_is_ended_at_the_bound(tmp_path):
    command = _script(tmp_path, "import time; print('cc -c a.c', flush=True); time.sleep(600)\n")
    with pytest.raises(BuildError, match=r"building the lib did not finish within 2 s; log: "):
        _build(command, tmp_path, timeout=2)
