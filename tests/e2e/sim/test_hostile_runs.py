"""Hostile runs (issue #31, runs): where a run folder may go, who may write it, and what a full disk, a failed
start or a damaged unfinished run leave. Every refusal is one line, exit 2, no traceback, nothing changed."""

import errno
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import harness
import harness.results.journal as journal_module
from harness.errors import LinkError, UserError
from tests.conftest import assert_refused_in_one_line, fixture_model
from tests.hostile import (
    DEV_ZERO,
    FIFO,
    FOLDER,
    NOT_A_FILE,
    NOT_JSON,
    NOT_TEXT,
    Case,
    make_files,
    run_case,
    run_harness,
    tree,
)

MODEL = "wv_quality_k_2_c_3"
LIMIT = 8
EVAL = ("eval", "--model", MODEL, "--limit", "2")
SIM_BOARD = (Path(__file__).resolve().parents[3] / "boards" / "sim.toml").read_text()


def _board(board_id: str) -> bytes:
    """The sim board's file under another id (TOML escapes: a newline stays a newline in the id)."""
    escaped = board_id.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return SIM_BOARD.replace('id = "sim"', f'id = "{escaped}"', 1).encode()


def _results_cases():
    no_results = {"results": b"a file, not a folder\n"}
    yield Case("results-empty", (*EVAL, "--results", ""), ("--results", "empty"))
    yield Case("results-blank", (*EVAL, "--results", "  "), ("--results", "empty"))
    yield Case("results-file", (*EVAL, "--results", "results"), ("results", "not a folder"), no_results)
    for form, (content, _) in NOT_A_FILE.items():
        if content is not FOLDER:
            yield Case(
                f"results-{form}", (*EVAL, "--results", "results"), ("results", "not a folder"), {"results": content}
            )
    yield Case("results-dev-null", (*EVAL, "--results", "/dev/null"), ("/dev/null", "not a folder"))
    yield Case(
        "results-under-a-file", (*EVAL, "--results", "f/r"), ("f/r cannot be used", "Not a directory"), {"f": b"x"}
    )
    yield Case("resume-results-empty", ("eval", "--resume", "RUN", "--results", ""), ("--results", "empty"))
    yield Case(
        "resume-results-fifo",
        ("eval", "--resume", "RUN", "--results", "results"),
        ("results", "not a folder"),
        {"results": FIFO},
    )


def _resume_id_cases():
    for name, run in [
        ("escaped", "../../escaped"),
        ("slash", "a/b"),
        ("dotdot", ".."),
        ("newline", "a\nb"),
        ("space", "a b"),
        ("too-long", "x" * 201),
        ("dash-first", "-x"),
    ]:
        yield Case(f"resume-id-{name}", ("eval", f"--resume={run}", "--results", "results"), ("not a valid run id",))


def _board_id_cases():
    for name, board_id in [
        ("escaped", "x/../../../escaped"),
        ("absolute", "/tmp/escaped"),
        ("dotdot", ".."),
        ("newline", "a\nb"),
        ("space", "a b"),
        ("too-long", "b" * 65),
    ]:
        yield Case(
            f"board-id-{name}",
            (*EVAL, "--board", "board.toml", "--results", "results"),
            ("holds the control character",) if "\n" in board_id else ("not a valid id",),
            {"board.toml": _board(board_id)},
        )


CASES = [*_results_cases(), *_resume_id_cases(), *_board_id_cases()]


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_a_run_folder_goes_nowhere_else(tmp_path, case, small_model):
    run_case(tmp_path, case)
    assert not list(tmp_path.parent.glob("escaped")) and not Path("/tmp/escaped").exists()


@pytest.mark.parametrize("resume", [False, True], ids=["eval", "resume"])
def test_results_not_utf8_is_refused_and_leaves_nothing(tmp_path, resume, small_model):
    what = ("--resume", "RUN") if resume else ("--model", MODEL, "--limit", "2")
    command = [sys.executable, "-m", "harness", "eval", *what, "--results", os.fsdecode(b"r\xff")]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert_refused_in_one_line(done, "--results", "not UTF-8", "0xff")
    assert list(tmp_path.iterdir()) == []


# A damaged unfinished run: what `--resume` reads (request.json, origin.json, journal.jsonl, rows/) -----------


@pytest.fixture(scope="module")
def unfinished(tmp_path_factory, private_cache) -> Path:
    """The partial folder of a run whose disk filled after 3 samples."""
    fixture_model("wake_vision_zoo/wv_quality_k_2_c_3.tflite")
    results = tmp_path_factory.mktemp("unfinished") / "results"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(journal_module, "os", FullDisk(after=3))
        with pytest.raises(UserError, match="No space left on device"):
            harness.evaluate(model=MODEL, limit=LIMIT, results=results)
    (partial,) = results.glob(".*.partial")
    return partial


class FullDisk:
    """harness/results/journal.py's `os`, whose writes fail with ENOSPC after `after` of them."""

    def __init__(self, after: int):
        self.after, self.writes = after, 0

    def __getattr__(self, name):
        return getattr(os, name)

    def write(self, fd: int, data: bytes) -> int:
        self.writes += 1
        if self.writes > self.after:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return os.write(fd, data)


JOURNAL_LINE = b'{"index": 9, "id": "x.jpg", "device_output": "00", "ticks": NaN}'


def _damaged_run_cases():
    """(id, file in the partial folder, its content or None to append `line` to the journal, expected words)."""
    for form, (content, words) in {**NOT_A_FILE, **NOT_TEXT, **NOT_JSON}.items():
        for name in ("request.json", "origin.json"):
            yield f"{name.split('.')[0]}-{form}", name, content, tuple(w.format(name=name) for w in words)
    for form, (content, _) in NOT_A_FILE.items():
        yield f"journal-{form}", "journal.jsonl", content, ("journal.jsonl", _what(content))
        yield f"row-group-{form}", "rows/group-00000.parquet", content, ("group-00000.parquet", _what(content))
    yield "row-group-garbage", "rows/group-00000.parquet", b"PAR1 not parquet PAR1", ("group-00000.parquet", "damaged")
    yield "request-missing", "request.json", None, ("no request.json", "not a resumable run")
    yield "origin-missing", "origin.json", None, ("no origin.json", "start a new run")
    for form, line, words in [
        ("deep", b"[" * 10000 + b"]" * 10000, ("deep",)),
        ("nan", JOURNAL_LINE, ("field 'ticks' is nan, not a finite number",)),
        ("huge-int", b'{"index": ' + b"9" * 5001 + b"}", ("integer",)),
        ("list", b"[1, 2, 3]", ("not a journal entry",)),
        ("wrong-types", b'{"index": "1", "id": 5}', ("not a journal entry",)),
    ]:
        yield f"journal-line-{form}", "journal.jsonl", line, ("journal.jsonl line 4", *words, "delete line 4")


def _what(content) -> str:
    return {id(FIFO): "is a FIFO", id(DEV_ZERO): "character device", id(FOLDER): "folder"}[id(content)]


def _without_lock(found: dict) -> dict:
    return {path: info for path, info in found.items() if not path.endswith(".lock")}


@pytest.mark.parametrize(("name", "file", "content", "words"), list(_damaged_run_cases()), ids=lambda v: v)
def test_a_damaged_unfinished_run_is_named_and_left_as_it_is(tmp_path, unfinished, name, file, content, words):
    results = tmp_path / "results"
    partial = results / unfinished.name
    shutil.copytree(unfinished, partial)
    target = partial / file
    if file == "journal.jsonl" and isinstance(content, bytes):
        with open(target, "ab") as f:
            f.write(content + b"\n")
    else:
        if target.is_dir():
            shutil.rmtree(target)
        else:
            target.unlink(missing_ok=True)
        if content is not None:
            make_files(partial, {file: content})
    before = tree(tmp_path)
    run_id = unfinished.name[1 : -len(".partial")]
    done = subprocess.run(
        [sys.executable, "-m", "harness", "eval", "--resume", run_id, "--results", str(results)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert_refused_in_one_line(done, *words)
    assert _without_lock(tree(tmp_path)) == _without_lock(before)


# A full disk, and a start that fails: in-process, the failure injected where it happens ---------------------


def test_a_full_disk_names_the_journal_and_the_run_resumes(tmp_path, monkeypatch, small_model):
    results = tmp_path / "results"
    monkeypatch.setattr(journal_module, "os", FullDisk(after=3))
    with pytest.raises(UserError) as refused:
        harness.evaluate(model=MODEL, limit=LIMIT, results=results)
    monkeypatch.undo()
    (partial,) = results.glob(".*.partial")
    run_id = partial.name[1 : -len(".partial")]
    message = str(refused.value)
    assert f"journal.jsonl of unfinished run {run_id} in {results}" in message
    assert "No space left on device" in message and "\n" not in message
    assert f"`harness eval --resume {run_id} --results {results}` goes on" in message
    run = harness.resume(run_id, results)
    assert run.summary.samples == LIMIT and run.summary.link["samples_from_journal"] == 3


def test_a_full_disk_at_the_first_sample_leaves_nothing(tmp_path, monkeypatch, small_model):
    monkeypatch.setattr(journal_module, "os", FullDisk(after=0))
    with pytest.raises(UserError) as refused:
        harness.evaluate(model=MODEL, limit=LIMIT, results=tmp_path / "new" / "results")
    assert "nothing was kept" in str(refused.value) and "No space left on device" in str(refused.value)
    assert list(tmp_path.iterdir()) == []


def test_a_full_disk_writing_the_samples_table_names_it_and_the_run_resumes(tmp_path, monkeypatch, small_model):
    import harness.eval.runner as runner

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # as pyarrow reports it: no file name

    results = tmp_path / "results"
    monkeypatch.setattr(runner, "write_samples", full)
    with pytest.raises(UserError) as refused:
        harness.evaluate(model=MODEL, limit=LIMIT, results=results)
    monkeypatch.undo()
    (partial,) = results.glob(".*.partial")
    run_id = partial.name[1 : -len(".partial")]
    message = str(refused.value)
    assert f"samples.parquet of unfinished run {run_id}" in message and "every sample done is kept" in message
    assert f"`harness eval --resume {run_id} --results {results}` goes on" in message
    assert harness.resume(run_id, results).summary.link["samples_from_journal"] == LIMIT


def test_a_full_disk_at_the_start_leaves_nothing(tmp_path, monkeypatch, small_model):
    import harness.eval.runner as runner

    def full(folder, settings):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(folder / "request.json"))

    monkeypatch.setattr(runner, "save_request", full)
    with pytest.raises(UserError, match=r"cannot create run .*No space left on device.*nothing was kept"):
        harness.evaluate(model=MODEL, limit=LIMIT, results=tmp_path / "new" / "results")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "failure",
    [
        LinkError("no HELLO from the board within 5 s"),
        OSError(errno.EIO, os.strerror(errno.EIO)),
        UserError("the model failed to load on sim (runner status 3)"),
        KeyboardInterrupt(),
    ],
    ids=["link-error", "port-failed", "model-refused", "ctrl-c"],
)
def test_a_start_that_fails_at_the_handshake_leaves_nothing(tmp_path, monkeypatch, failure, small_model):
    import harness.eval.runner as runner

    def handshake_fails(infos):
        raise failure

    monkeypatch.setattr(runner, "check_same_firmware", handshake_fails)
    with pytest.raises(type(failure)):
        harness.evaluate(model=MODEL, limit=LIMIT, results=tmp_path / "new" / "results")
    assert list(tmp_path.iterdir()) == []


def test_a_handshake_failure_on_resume_keeps_the_run(tmp_path, monkeypatch, unfinished):
    import harness.eval.runner as runner

    results = tmp_path / "results"
    shutil.copytree(unfinished, results / unfinished.name)
    run_id = unfinished.name[1 : -len(".partial")]

    def handshake_fails(infos):
        raise LinkError("no HELLO from the board within 5 s")

    monkeypatch.setattr(runner, "check_same_firmware", handshake_fails)
    with pytest.raises(LinkError, match=re.escape(f"`harness eval --resume {run_id} --results {results}` goes on")):
        harness.resume(run_id, results)
    monkeypatch.undo()
    assert harness.resume(run_id, results).summary.samples == LIMIT


@pytest.mark.parametrize("name", ["samples.parquet", "manifest.json", "summary.json"])
def test_a_fifo_where_a_run_file_goes_is_refused_left_as_it_is_and_the_run_resumes(tmp_path, unfinished, name):
    results = tmp_path / "results"
    partial = results / unfinished.name
    shutil.copytree(unfinished, partial)
    os.mkfifo(partial / name)
    run_id = unfinished.name[1 : -len(".partial")]
    command = ("eval", "--resume", run_id, "--results", str(results), "--quiet")
    before = tree(tmp_path)
    assert_refused_in_one_line(run_harness(tmp_path, *command), name, "is a FIFO", "only ever replaces regular files")
    assert _without_lock(tree(tmp_path)) == _without_lock(before)  # refused before any sample ran
    assert stat.S_ISFIFO((partial / name).lstat().st_mode)
    (partial / name).unlink()
    done = run_harness(tmp_path, *command)
    assert done.returncode == 0, done.stderr
    assert (results / run_id / "summary.json").is_file() and not partial.exists()
