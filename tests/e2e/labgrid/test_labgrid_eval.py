"""`harness eval --labgrid-place` through a real labgrid farm on loopback (tests/labgrid_farm.py): a coordinator,
an exporter serving the virtual board's pseudo-terminal through ser2net (RFC 2217), and places. The board is
the virtual board run as a standalone process and described by a user board file of kind "device" (its
figures stay `sim`: they come from a virtual board)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from harness.cli import exits
from harness.device.processes import pty_board_process
from tests.conftest import assert_refused_in_one_line, error_lines, fixture_model
from tests.labgrid_farm import labgrid_farm, needs_labgrid
from tests.sim_device import BOARD, sim_board_command, write_board_file

pytestmark = needs_labgrid

MODEL = "wv_quality_k_2_c_3"
PLACE, SPARE, EMPTY = "lab-1", "lab-2", "lab-3"  # two virtual boards; a port with no device
BROKEN = "lab-4"  # not a /dev path: the exporter's ser2net start fails, and it marks the resource broken
INVOKE_MS = 40  # each sample takes this long at least: a run is still going when a test stops it


@pytest.fixture(scope="module")
def boards_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("boards")
    write_board_file(folder)
    return folder


@pytest.fixture(scope="module")
def farm(private_cache, boards_dir):
    model = fixture_model(f"wake_vision_zoo/{MODEL}.tflite")
    command = sim_board_command(model, INVOKE_MS)
    with (
        pty_board_process(command, "the virtual board", 30) as pty,
        pty_board_process(command, "the second virtual board", 30) as second,  # sharded runs, reservations
        labgrid_farm(
            {PLACE: pty, SPARE: second, EMPTY: "/dev/pts/no-such-pty", BROKEN: "/tmp/not-a-device"},
            {PLACE: {"board": BOARD}, SPARE: {"board": BOARD}},
        ) as lab,
    ):
        yield lab


# How long a run waits for a place someone holds: a place just released is still being released by its exporter
# for a moment (the coordinator refuses an acquire until then), longer on a loaded machine, so runs wait as a
# user's would (harness's default is 300 s); the test of a place held by someone else waits 2 s.
WAIT_SECONDS = "60"


def _env(farm, boards_dir, **extra) -> dict[str, str]:
    return farm.env | {"HARNESS_BOARDS_DIR": str(boards_dir), "HARNESS_LABGRID_WAIT_SECONDS": WAIT_SECONDS} | extra


def _eval_command(results: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "harness", "eval", "--model", MODEL, "--results", str(results), *args]


def _run(command, env, cwd) -> subprocess.CompletedProcess:
    return subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=120)


def _outputs(results: Path) -> dict[str, bytes]:
    (run,) = [p for p in results.iterdir() if not p.name.startswith(".")]
    return {row["sample_id"]: row["device_output"] for row in pq.read_table(run / "samples.parquet").to_pylist()}


def _wait_for_holder(farm, place: str, seconds: float = 60) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if holder := farm.holder(place):
            return holder
        time.sleep(0.1)
    raise AssertionError(f"nobody acquired {place} within {seconds} s")


def test_eval_through_a_place_matches_the_virtual_board(farm, boards_dir, tmp_path):
    env = _env(farm, boards_dir)
    done = _run(
        _eval_command(tmp_path / "lab", "--board", BOARD, "--labgrid-place", PLACE, "--limit", "8"), env, tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert farm.holder(PLACE) is None
    sim = _run(_eval_command(tmp_path / "sim", "--board", "sim", "--limit", "8"), env, tmp_path)
    assert sim.returncode == 0, sim.stderr
    lab, reference = _outputs(tmp_path / "lab"), _outputs(tmp_path / "sim")
    assert len(lab) == 8 and lab == reference
    rows = pq.read_table(next((tmp_path / "lab").iterdir()) / "samples.parquet").to_pylist()
    assert all(row["latency_source"] == "sim" for row in rows)


@pytest.mark.parametrize("how", ["SIGKILL", "SIGINT"])
def test_a_stopped_eval_leaves_the_place_free(farm, boards_dir, tmp_path, how):
    env = _env(farm, boards_dir)
    command = _eval_command(tmp_path / "stopped", "--board", BOARD, "--labgrid-place", PLACE, "--limit", "40")
    harness = subprocess.Popen(
        command, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        _wait_for_holder(farm, PLACE)
        time.sleep(0.5)  # into the samples
        assert harness.poll() is None, harness.communicate()[1]
        harness.send_signal(getattr(signal, how))
        _, err = harness.communicate(timeout=60)
    finally:
        harness.kill()
    if how == "SIGINT":
        assert harness.returncode == 130, err
        assert "Traceback" not in err
    assert farm.wait_released(PLACE), f"{PLACE} is still held by {farm.holder(PLACE)}; {err}\n{farm.logs()}"
    again = _run(
        _eval_command(tmp_path / "again", "--board", BOARD, "--labgrid-place", PLACE, "--limit", "2"), env, tmp_path
    )
    assert again.returncode == 0, again.stderr


def test_a_place_held_by_someone_else_is_a_link_error_naming_them(farm, boards_dir, tmp_path):
    farm.client("-p", PLACE, "acquire", user="alice")
    try:
        results = tmp_path / "results"
        done = _run(
            _eval_command(results, "--board", BOARD, "--labgrid-place", PLACE, "--limit", "2"),
            _env(farm, boards_dir, HARNESS_LABGRID_WAIT_SECONDS="2"),
            tmp_path,
        )
        assert farm.holder(PLACE).endswith("/alice")
    finally:
        farm.client("-p", PLACE, "release", user="alice")
    assert done.returncode == exits.LINK, done.stderr
    assert "Traceback" not in done.stderr
    notice, line = error_lines(done)  # a notice as harness starts to wait, then the error
    assert notice.startswith("harness: waiting for labgrid place lab-1, held by ") and "/alice" in notice, notice
    assert line.startswith("harness: link error: labgrid place lab-1 is held by ") and "/alice" in line, line
    assert "HARNESS_LABGRID_WAIT_SECONDS" in line
    assert not results.exists() or not any(results.iterdir())


def test_a_place_that_does_not_exist_is_refused(farm, boards_dir, tmp_path):
    done = _run(
        _eval_command(tmp_path / "r", "--board", BOARD, "--labgrid-place", "nowhere", "--limit", "2"),
        _env(farm, boards_dir),
        tmp_path,
    )
    assert done.returncode == exits.DEVICE_NOT_FOUND, done.stderr
    (line,) = error_lines(done)
    assert "has no place 'nowhere'" in line and "lab-1" in line, line


def test_a_place_whose_port_does_not_open_is_a_link_error_and_is_released(farm, boards_dir, tmp_path):
    command = [sys.executable, "-m", "harness", "boards", "link-test", "--board", BOARD, "--labgrid-place", EMPTY]
    done = _run(command, _env(farm, boards_dir), tmp_path)
    assert done.returncode == exits.LINK, done.stderr
    (line,) = error_lines(done)
    assert (
        line.startswith("harness: link error: labgrid place lab-3's serial port (rfc2217://") and "did not open" in line
    )
    assert farm.holder(EMPTY) is None


def test_reserved_places_by_tag_then_cancelled(farm, monkeypatch):
    from harness.device.labgrid_place import labgrid_port
    from harness.device.labgrid_reserve import reserved_places
    from harness.errors import LinkError, UserError

    monkeypatch.setenv("LG_COORDINATOR", farm.coordinator)
    with reserved_places({"board": BOARD}, 2, wait=10) as places:
        assert sorted(places) == [PLACE, SPARE]
        (mine,) = {r.owner for r in farm.reservations()}
        with labgrid_port(SPARE) as url:
            assert url.startswith("rfc2217://127.0.0.1:")
            assert farm.holder(SPARE) == mine
        assert farm.holder(SPARE) is None
    assert farm.reservations() == []

    farm.client("-p", SPARE, "acquire", user="alice")
    try:
        with pytest.raises(LinkError, match="alice"), reserved_places({"board": BOARD}, 2, wait=1):
            pass
    finally:
        farm.client("-p", SPARE, "release", user="alice")
    assert farm.reservations() == []
    with pytest.raises(UserError, match="board=elsewhere"), reserved_places({"board": "elsewhere"}, 1):
        pass


@pytest.mark.parametrize("boards", [("--labgrid-place", f"{PLACE},{SPARE}"), ("--labgrid-tags", f"board={BOARD}")])
def test_one_eval_sharded_over_two_places(farm, boards_dir, tmp_path, boards):
    env = _env(farm, boards_dir)
    count = ("--boards", "2") if boards[0] == "--labgrid-tags" else ()
    done = _run(_eval_command(tmp_path / "lab", "--board", BOARD, *boards, *count, "--limit", "12"), env, tmp_path)
    assert done.returncode == 0, done.stderr
    assert farm.holder(PLACE) is None and farm.holder(SPARE) is None and farm.reservations() == []
    sim = _run(_eval_command(tmp_path / "sim", "--board", "sim", "--limit", "12"), env, tmp_path)
    assert sim.returncode == 0, sim.stderr
    assert _outputs(tmp_path / "lab") == _outputs(tmp_path / "sim")
    rows = pq.read_table(next((tmp_path / "lab").iterdir()) / "samples.parquet").to_pylist()
    assert {row["board"] for row in rows} <= {PLACE, SPARE} and len(rows) == 12


def test_a_killed_sharded_run_leaves_no_place_held_and_no_reservation(farm, boards_dir, tmp_path):
    env = _env(farm, boards_dir)
    command = _eval_command(tmp_path / "killed", "--board", BOARD, "--labgrid-tags", f"board={BOARD}", "--boards", "2")
    harness = subprocess.Popen(
        [*command, "--limit", "40"], env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        _wait_for_holder(farm, PLACE)
        _wait_for_holder(farm, SPARE)
        harness.send_signal(signal.SIGKILL)
        _, err = harness.communicate(timeout=60)
    finally:
        harness.kill()
    assert farm.wait_released(PLACE) and farm.wait_released(SPARE), f"{err}\n{farm.logs()}"
    deadline = time.monotonic() + 20
    while farm.reservations() and time.monotonic() < deadline:
        time.sleep(0.3)
    assert farm.reservations() == []


def _no_results(results: Path) -> bool:
    return not results.exists() or not any(results.iterdir())


@pytest.mark.parametrize("address", ["127.0.0.1:244o8", "not:a:host"])
def test_a_malformed_coordinator_address_is_refused_before_anything_is_written(farm, boards_dir, tmp_path, address):
    results = tmp_path / "results"
    command = _eval_command(results, "--board", BOARD, "--labgrid-place", PLACE, "--limit", "2")
    done = _run(command, _env(farm, boards_dir, LG_COORDINATOR=address), tmp_path)
    assert_refused_in_one_line(done, f"LG_COORDINATOR={address!r} is not a coordinator address", "host:port")
    assert _no_results(results)


def test_a_place_without_a_serial_port_is_named_at_once(farm, boards_dir, tmp_path):
    from labgrid.remote.generated import labgrid_coordinator_pb2 as pb2

    async def add_bare_place(session):
        await session.stub.AddPlace(pb2.AddPlaceRequest(name="bare"))
        await session.stub.AddPlaceMatch(pb2.AddPlaceMatchRequest(placename="bare", pattern="elsewhere/*/*"))

    farm.call(add_bare_place)
    results = tmp_path / "results"
    # refused before the acquire, naming what the place lacks (after the acquire, the port's 20 s gave another line)
    done = _run(
        _eval_command(results, "--board", BOARD, "--labgrid-place", "bare", "--limit", "2"),
        _env(farm, boards_dir),
        tmp_path,
    )
    assert_refused_in_one_line(done, "labgrid place bare has no serial port", "matches (elsewhere/*/*)", "add-match")
    assert farm.holder("bare") is None and _no_results(results)


def test_a_broken_resource_is_named_as_broken_not_waited_for(farm, boards_dir, tmp_path):
    env = _env(farm, boards_dir, HARNESS_LABGRID_WAIT_SECONDS="300")
    for attempt in ("breaks it", "finds it broken"):  # the exporter marks it broken as the first acquire starts it
        results = tmp_path / attempt
        # named as broken, not waited for: the 300 s wait for a holder would outlast _run's 120 s timeout
        done = _run(_eval_command(results, "--board", BOARD, "--labgrid-place", BROKEN, "--limit", "2"), env, tmp_path)
        assert_refused_in_one_line(
            done,
            f"labgrid place {BROKEN}: its exporter marked 127.0.0.1/{BROKEN}/NetworkSerialPort/",
            "broken",
            "restart the exporter",
            code=exits.LINK,
        )
        assert "held by" not in done.stderr and "waiting" not in done.stderr, attempt
        assert farm.holder(BROKEN) is None and _no_results(results)


def _guard_of(harness: subprocess.Popen) -> int:
    """The pid of harness's labgrid guard (its child running harness.device.labgrid_guard)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                command = (entry / "cmdline").read_bytes()
            except (OSError, ValueError, IndexError):
                continue
            if ppid == harness.pid and b"harness.device.labgrid_guard" in command:
                return int(entry.name)
        time.sleep(0.1)
    raise AssertionError("harness started no labgrid guard")


def _journaling(results: Path, harness: subprocess.Popen, seconds: float = 600) -> None:
    """Wait until the run journals samples: the place is acquired and its board answers. Bounded by the run
    itself (it must still be running), not by the machine's speed: on a loaded CI worker the first sample may
    wait for that worker's demo set and conversions."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if any(journal.stat().st_size for journal in results.glob(".*.partial/journal.jsonl")):
            return
        if harness.poll() is not None:
            raise AssertionError(f"harness ended (exit {harness.returncode}) before it journaled a sample")
        time.sleep(0.05)
    raise AssertionError(f"no sample journaled in {results} within {seconds} s")


def _killed_with_its_guard(farm, env, results: Path, cwd) -> int:
    """Start an eval on PLACE, then SIGKILL harness and its guard together once samples flow (a CI runner
    killing the job's processes): the place stays acquired. Returns harness's pid."""
    command = _eval_command(results, "--board", BOARD, "--labgrid-place", PLACE, "--limit", "40")
    harness = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        guard = _guard_of(harness)
        _journaling(results, harness)
        holder = farm.holder(PLACE)
        os.kill(guard, signal.SIGKILL)
        harness.kill()
        harness.wait(timeout=30)
    finally:
        harness.kill()
    time.sleep(0.5)  # a guard still alive would have released it by now
    assert farm.holder(PLACE) == holder, "the place was released: harness and its guard were not both killed"
    return harness.pid


def test_an_acquisition_left_by_a_killed_harness_and_guard_is_released(farm, boards_dir, tmp_path):
    env = _env(farm, boards_dir)
    pid = _killed_with_its_guard(farm, env, tmp_path / "killed", tmp_path)
    done = _run(
        _eval_command(tmp_path / "next", "--board", BOARD, "--labgrid-place", PLACE, "--limit", "2"), env, tmp_path
    )
    assert done.returncode == 0, done.stderr
    (notice,) = [line for line in error_lines(done) if line.startswith("harness: labgrid place")]
    assert notice.startswith(
        f"harness: labgrid place {PLACE} was left acquired by a harness that no longer runs (pid {pid} on host "
    ) and notice.endswith("); released it"), notice
    assert farm.holder(PLACE) is None


def test_farm_release_releases_an_acquisition_left_by_a_killed_harness_and_guard(farm, boards_dir, tmp_path):
    env = _env(farm, boards_dir)
    _killed_with_its_guard(farm, env, tmp_path / "killed", tmp_path)
    release = [sys.executable, "-m", "harness", "farm", "release", PLACE]
    done = _run(release, env, tmp_path)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.startswith(f"released labgrid place {PLACE} (acquired by ") and farm.holder(PLACE) is None
    done = _run(release, env, tmp_path)
    assert done.returncode == 0 and done.stdout.strip() == f"labgrid place {PLACE} is not acquired: nothing to release"


def test_farm_release_releases_only_this_users_place(farm, boards_dir, tmp_path):
    release = [sys.executable, "-m", "harness", "farm", "release", SPARE]
    farm.client("-p", SPARE, "acquire", user="alice")
    try:
        done = _run(release, _env(farm, boards_dir, LG_USERNAME="bob"), tmp_path)
        assert_refused_in_one_line(done, f"labgrid place {SPARE} is held by ", "/alice, not by ", "/bob", "--kick")
        assert farm.holder(SPARE).endswith("/alice")
        done = _run(release, _env(farm, boards_dir, LG_USERNAME="alice"), tmp_path)  # a labgrid-client acquisition
        assert done.returncode == 0, done.stderr
        assert farm.holder(SPARE) is None
    finally:
        farm.client("-p", SPARE, "release", "--kick", user="alice", check=False)
    done = _run([*release[:-1], "nowhere"], _env(farm, boards_dir), tmp_path)
    assert done.returncode == exits.DEVICE_NOT_FOUND and "has no place 'nowhere'" in done.stderr, done.stderr
