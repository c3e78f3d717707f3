"""`harness eval --resume`: a run killed with SIGKILL at a random point finishes from its journal."""

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time

import pyarrow.parquet as pq

LIMIT = 24
COMMON = ["eval", "--model", "wv_quality_k_2_c_3", "--limit", str(LIMIT), "--emulate-invoke-ms", "40", "--json"]
COMPARED = ("sample_id", "device_output", "device_prediction", "tflm_output")


def _harness(*args):
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True)


def _table(results):
    (run,) = [p for p in results.iterdir() if not p.name.startswith(".")]
    table = pq.read_table(run / "samples.parquet")
    return {name: table.column(name).to_pylist() for name in COMPARED}


def _journal_lines(results) -> int:
    partials = list(results.glob(".*.partial/journal.jsonl"))
    return partials[0].read_bytes().count(b"\n") if partials else 0


def test_a_run_killed_at_a_random_point_resumes_to_the_uninterrupted_results(tmp_path, small_model):
    whole = tmp_path / "whole"
    done = _harness(*COMMON, "--results", str(whole))
    assert done.returncode == 0, done.stderr

    killed = tmp_path / "killed"
    stop_after = random.randint(1, LIMIT - 2)
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", *COMMON, "--results", str(killed)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while _journal_lines(killed) < stop_after and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert len(list(killed.glob(".*.partial"))) == 1  # one unfinished run: latest names it
    journaled = _journal_lines(killed)
    assert 1 <= journaled < LIMIT, f"killed after {journaled} samples"

    resumed = _harness("eval", "--resume", "latest", "--results", str(killed), "--json")  # the newest unfinished run
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads(resumed.stdout)
    assert summary["samples"] == LIMIT and summary["link"]["samples_from_journal"] == journaled
    assert not list(killed.glob(".*.partial"))
    assert _table(killed) == _table(whole)


def test_resume_of_an_unknown_run_is_a_one_line_user_error(tmp_path):
    done = _harness("eval", "--resume", "no-such-run", "--results", str(tmp_path))
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "no unfinished run" in done.stderr


def _interrupted_run(results, *args, after: int, sig=signal.SIGKILL):
    """A run of COMMON (plus args) stopped with `sig` once `after` samples are journaled: (run id, process)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", *COMMON, *args, "--results", str(results)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while _journal_lines(results) < after and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    os.kill(proc.pid, sig)
    proc.wait()
    (partial,) = results.glob(".*.partial")
    return partial.name[1 : -len(".partial")], proc


def _resume(run_id, results):
    return _harness("eval", "--resume", run_id, "--results", str(results), "--json")


def _one_line_error(done, *words):
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "Traceback" not in done.stderr and all(w in done.stderr for w in words), done.stderr


def test_resume_with_another_model_or_firmware_is_refused_and_the_run_stays_resumable(tmp_path, small_model):
    from model_surgery import swap_output_classes

    model = tmp_path / "model.tflite"
    original = small_model.read_bytes()
    model.write_bytes(original)
    results = tmp_path / "results"
    run_id, _ = _interrupted_run(results, "--model-file", str(model), after=5)
    partial = results / f".{run_id}.partial"
    journaled = _journal_lines(results)
    origin = json.loads((partial / "origin.json").read_text())

    model.write_bytes(swap_output_classes(original))
    _one_line_error(_resume(run_id, results), "model changed since the run started", "start a new run")
    assert _journal_lines(results) == journaled

    model.write_bytes(original)
    (partial / "origin.json").write_text(json.dumps(origin | {"firmware_build_id": "another-build"}))
    _one_line_error(_resume(run_id, results), "firmware changed since the run started")
    assert _journal_lines(results) == journaled

    (partial / "origin.json").write_text(json.dumps(origin))
    done = _resume(run_id, results)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["link"]["samples_from_journal"] == journaled
    manifest = json.loads((results / run_id / "manifest.json").read_text())
    assert manifest["started"] == origin["started"]


def test_a_journal_line_cut_short_and_glued_to_the_next_is_run_again(tmp_path, small_model):
    whole = tmp_path / "whole"
    assert _harness(*COMMON, "--results", str(whole)).returncode == 0
    results = tmp_path / "killed"
    run_id, _ = _interrupted_run(results, after=6)
    journal = results / f".{run_id}.partial" / "journal.jsonl"
    lines = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(b"".join([*lines[:2], lines[2][:40], lines[3]]))  # a short write, then the next append

    done = _resume(run_id, results)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["link"]["samples_from_journal"] == 2  # only the last line may be cut short
    assert _table(results) == _table(whole)


def test_a_journal_line_cut_short_before_the_last_is_named_not_run_again(tmp_path, small_model):
    results = tmp_path / "killed"
    run_id, _ = _interrupted_run(results, after=6)
    journal = results / f".{run_id}.partial" / "journal.jsonl"
    lines = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(b"".join([*lines[:2], lines[2][:40], *lines[3:]]))
    _one_line_error(_resume(run_id, results), "journal.jsonl line 3", "delete line 3")


def test_a_journal_entry_beyond_the_dataset_is_a_dataset_changed_error(tmp_path, small_model):
    results = tmp_path / "results"
    run_id, _ = _interrupted_run(results, after=3)
    journal = results / f".{run_id}.partial" / "journal.jsonl"
    entry = json.loads(journal.read_bytes().splitlines()[0])
    with open(journal, "a") as f:
        f.write(json.dumps(entry | {"index": LIMIT + 5}) + "\n")
    words = (f"journal.jsonl holds sample {LIMIT + 5}", "dataset changed since the run started")
    _one_line_error(_resume(run_id, results), *words)


def test_ctrl_c_names_the_samples_kept_and_how_to_go_on(tmp_path, small_model):
    results = tmp_path / "results"
    run_id, proc = _interrupted_run(results, after=3, sig=signal.SIGINT)
    kept = _journal_lines(results)
    assert proc.returncode == 130
    assert proc.stderr.read().strip() == (
        f"harness: interrupted: {kept} samples kept; `harness eval --resume {run_id} --results {results}` goes on"
    )
    assert _resume(run_id, results).returncode == 0


def test_sigterm_is_a_clean_stop_like_ctrl_c_and_the_run_resumes(tmp_path, small_model):
    results = tmp_path / "results"
    run_id, proc = _interrupted_run(results, after=3, sig=signal.SIGTERM)
    kept = _journal_lines(results)
    assert proc.returncode == 143
    assert proc.stderr.read().strip() == (
        f"harness: terminated (SIGTERM): {kept} samples kept; `harness eval --resume {run_id} --results {results}` "
        "goes on"
    )
    done = _resume(run_id, results)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["samples"] == LIMIT and summary["link"]["samples_from_journal"] == kept


def _holds(lock, pid: int) -> bool:
    try:
        return lock.read_text().split()[:1] == [str(pid)]
    except OSError:
        return False


def test_two_resumes_of_one_run_at_once_the_second_is_refused_and_the_run_completes(tmp_path, small_model):
    results = tmp_path / "results"
    run_id, _ = _interrupted_run(results, "--emulate-invoke-ms", "300", after=3)  # the rest takes some 6 s
    journaled = _journal_lines(results)
    first = subprocess.Popen(
        [sys.executable, "-m", "harness", "eval", "--resume", run_id, "--results", str(results), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lock = results / f".{run_id}.partial" / ".lock"
    deadline = time.monotonic() + 60
    while not _holds(lock, first.pid) and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _holds(lock, first.pid), "the first resume never held the run"

    second = _resume(run_id, results)
    _one_line_error(second, "is being written by", f"pid {first.pid} on host {socket.gethostname()}")
    out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    summary = json.loads(out)
    assert summary["samples"] == LIMIT and summary["link"]["samples_from_journal"] == journaled
    assert not list(results.glob(".*.partial"))
    (run,) = results.iterdir()
    assert pq.read_table(run / "samples.parquet").num_rows == LIMIT
