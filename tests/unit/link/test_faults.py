"""The fault-injection proxy and recovery through it: damaged, dropped and duplicated bytes, device resets."""

import json
import os
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from harness.errors import UserError
from harness.link.faults import FaultProxy, FaultSpec


def test_fault_spec_parses_the_documented_form_and_refuses_nonsense():
    spec = FaultSpec.parse("drop=1e-3,corrupt=1e-3,dup=1e-4,reset-every=200")
    assert spec == FaultSpec(drop=1e-3, corrupt=1e-3, dup=1e-4, reset_every=200)
    for bad in ("drop", "lose=0.1", "drop=x", "corrupt=0.7", "reset-every=-1"):
        with pytest.raises(UserError):
            FaultSpec.parse(bad)


def test_proxy_damages_bytes_at_the_rates_asked_for():
    master, slave = os.openpty()
    try:
        with open(slave, "rb", buffering=0) as device:
            proxy = FaultProxy(device, FaultSpec(drop=0.01, corrupt=0.02, dup=0.005), seed=1)
            data = bytes(200_000)
            out = proxy.damage(data)
    finally:
        os.close(master)
    counts = proxy.counts
    assert 1600 < counts["dropped"] < 2400 and 3400 < counts["corrupted"] < 4600 and 700 < counts["duplicated"] < 1300
    assert len(out) == len(data) - counts["dropped"] + counts["duplicated"]
    assert len(out) - out.count(0) <= counts["corrupted"] * 2  # a corrupted byte may also be duplicated


def test_reset_every_needs_a_board_harness_can_reset():
    with pytest.raises(UserError, match="reset-every"):
        FaultProxy(None, FaultSpec(reset_every=10))


def _eval(tmp_path, name, *extra):
    results = tmp_path / name
    command = [sys.executable, "-m", "harness", "eval", "--model", "wv_quality_k_2_c_3", "--limit", "12", "--json"]
    done = subprocess.run([*command, "--results", str(results), *extra], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    (run,) = results.iterdir()
    return pq.read_table(run / "samples.parquet").column("device_output").to_pylist(), json.loads(done.stdout)


@pytest.mark.slow
def test_eval_through_damaging_proxy_with_resets_gives_the_clean_results(tmp_path, small_model):
    clean, _ = _eval(tmp_path, "clean")
    faulty, summary = _eval(tmp_path, "faulty", "--faults", "drop=1e-3,corrupt=1e-3,dup=1e-4,reset-every=5")
    assert faulty == clean and len(clean) == 12
    link = summary["link"]
    injected = link["faults_injected"]
    assert injected["resets"] >= 2 and injected["dropped"] > 0 and injected["corrupted"] > 0
    assert link["resends"] > 0 and link["resets"] >= 1


def test_a_board_end_that_closes_neither_kills_the_relay_nor_spins():
    import resource
    import time

    master, slave = os.openpty()

    class Board:
        def fileno(self):
            return master

    try:
        with FaultProxy(Board(), FaultSpec(), seed=1) as proxy:
            host = os.open(proxy.path, os.O_RDWR | os.O_NOCTTY)
            os.close(slave)  # the board is gone: its end reads EIO from now on
            os.write(host, b"x" * 64)
            before = resource.getrusage(resource.RUSAGE_SELF)
            time.sleep(0.5)
            after = resource.getrusage(resource.RUSAGE_SELF)
            busy = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
            assert proxy._thread.is_alive()
            os.close(host)
        assert busy < 0.2, f"the relay used {busy:.2f} s of CPU in 0.5 s"
    finally:
        os.close(master)
