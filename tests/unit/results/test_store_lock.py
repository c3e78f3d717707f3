"""Run folders on their own (harness/results/store.py): held by one writer at a time, named only from valid ids,
always directly inside --results, and --results itself checked before any work."""

import os
import signal
import socket
import subprocess
import sys

import pytest

from harness.errors import UserError
from harness.names import check_run_id
from harness.results.store import (
    check_not_held,
    hold_run,
    id_part,
    new_run_id,
    open_partial,
    partial_path,
    publish,
    results_root,
    resume_target,
    run_folder,
)

HOLDER = f"pid {os.getpid()} on host {socket.gethostname()}"
BAD_IDS = ["x/../../../escaped", "../escaped", "..", ".", "", "a\nb", " x", "a b", "-x", "x" * 65, "caf\u00e9"]


def test_a_second_writer_of_a_held_run_folder_is_refused_naming_pid_and_host(tmp_path):
    with hold_run(tmp_path):
        with pytest.raises(UserError) as refused, hold_run(tmp_path):
            pass
        assert HOLDER in str(refused.value) and str(tmp_path) in str(refused.value)
        with pytest.raises(UserError, match=HOLDER):
            check_not_held(tmp_path)
    check_not_held(tmp_path)  # released when the block ends
    with hold_run(tmp_path):
        pass


def test_a_holder_killed_with_sigkill_leaves_no_lock_behind(tmp_path):
    code = (
        "import sys, time; from pathlib import Path; from harness.results.store import hold_run\n"
        "with hold_run(Path(sys.argv[1])):\n    print('held', flush=True); time.sleep(60)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(UserError, match=f"pid {holder.pid} on host"):
            check_not_held(tmp_path)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    check_not_held(tmp_path)
    with hold_run(tmp_path):
        pass


@pytest.mark.parametrize("bad", BAD_IDS, ids=repr)
def test_a_run_id_is_made_only_from_valid_model_and_board_ids(bad):
    with pytest.raises(UserError, match="is not a valid id"):
        new_run_id("model", bad)
    with pytest.raises(UserError, match="is not a valid id"):
        new_run_id(bad, "sim")


def test_a_run_id_of_long_model_and_board_ids_is_valid():
    run_id = new_run_id("m" * 64, "b" * 64)
    assert check_run_id(run_id) == run_id and len(run_id) > 64


@pytest.mark.parametrize("bad", ["../escaped", "a/b", "..", "a\nb", "x" * 201, ""], ids=repr)
def test_a_run_id_given_back_is_checked(tmp_path, bad):
    with pytest.raises(UserError) as refused:
        resume_target(tmp_path, bad)
    assert "valid run id" in str(refused.value) and "\n" not in str(refused.value)


def test_a_partial_folder_given_to_resume_names_its_results_folder_and_run(tmp_path):
    assert resume_target(tmp_path / "elsewhere", str(tmp_path / ".run-1.partial")) == (tmp_path, "run-1")


@pytest.mark.parametrize(
    ("name", "made"),
    [("my images", "my_images"), ("../../up", "up"), ("\n", "unnamed"), ("\u00e9t\u00e9", "t_")],
)
def test_a_folder_name_is_made_into_an_id_part(name, made):
    assert id_part(name) == made


def test_a_partial_folder_that_is_a_link_elsewhere_is_refused(tmp_path):
    results, outside = tmp_path / "results", tmp_path / "outside"
    results.mkdir()
    outside.mkdir()
    (results / ".run-1.partial").symlink_to(outside)
    with pytest.raises(UserError, match="does not lie in results folder"):
        open_partial(results, "run-1", resume=True)
    with pytest.raises(UserError, match="does not lie in results folder"):
        publish(results, "run-1")


def test_a_run_folder_is_made_directly_in_the_resolved_results_folder(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    folder = open_partial(tmp_path / "link", "run-1", resume=False)
    assert os.path.realpath(folder.path) == str(tmp_path / "real" / ".run-1.partial")
    assert publish(tmp_path / "link", "run-1").resolve() == tmp_path / "real" / "run-1"


@pytest.mark.parametrize("bad", ["", " ", "r\udcff"], ids=["empty", "blank", "not-utf8"])
def test_results_that_is_no_usable_name_is_refused(bad):
    with pytest.raises(UserError) as refused:
        results_root(bad)
    message = str(refused.value)
    assert "results" in message and "\n" not in message
    message.encode("utf-8")  # printable: the byte is shown as \xff, not as a lone surrogate


def test_results_that_is_not_a_folder_is_refused(tmp_path):
    (tmp_path / "file").write_text("x")
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "zero").symlink_to("/dev/zero")
    for name in ("file", "fifo", "zero"):
        with pytest.raises(UserError, match="not a folder"):
            results_root(tmp_path / name)
    with pytest.raises(UserError, match="not a folder"):
        results_root("/dev/null")


def test_a_run_folder_that_cannot_be_made_leaves_no_results_folder(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(UserError, match="cannot create run"):
        open_partial(tmp_path / "file" / "r", "run-1", resume=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_a_failed_start_leaves_no_folder_it_made(tmp_path):
    folder = open_partial(tmp_path / "a" / "b", "run-1", resume=False)
    folder.discard()
    assert list(tmp_path.iterdir()) == []


def test_a_stream_or_referee_run_folder_is_held_while_written(tmp_path):
    with run_folder(tmp_path, "run-1") as folder:
        with pytest.raises(UserError, match=HOLDER):
            check_not_held(folder.path)
        (folder.path / "summary.json").write_text("{}")
    assert (tmp_path / "run-1" / "summary.json").is_file() and not partial_path(tmp_path, "run-1").exists()


def test_a_stream_run_folder_that_fails_leaves_nothing(tmp_path):
    with pytest.raises(RuntimeError), run_folder(tmp_path, "run-1"):
        raise RuntimeError("the board died")
    assert list(tmp_path.iterdir()) == []


def test_a_failed_write_names_the_run_file(tmp_path, monkeypatch):
    import errno

    import pyarrow.parquet as pq

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(pq, "write_table", full)
    with pytest.raises(OSError) as failed, run_folder(tmp_path, "run-1") as folder:
        folder.write_table("power.parquet", {"t": [1.0]})
    assert failed.value.filename.endswith("power.parquet") and failed.value.errno == errno.ENOSPC
