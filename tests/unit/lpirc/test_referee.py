"""The LPIRC-style referee: a client plays a whole session over real HTTP, past the time limit."""

import json
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest
from PIL import Image

from harness import cli
from harness.cli import exits
from harness.energy.meter import Meter
from harness.energy.profile import PowerProfile
from harness.energy.trace import PowerTrace
from harness.energy.wt310 import Wt310Meter
from harness.energy.wt310_sim import Wt310Simulator
from harness.errors import LinkError
from harness.eval.detection import Box
from harness.eval.order import shuffle_in_groups
from harness.lpirc import referee as referee_module
from harness.lpirc.referee import Referee, load_referee_set, save_session
from harness.lpirc.scores import score_run

# One 10x10-ish object per image, each of its own class.
TRUTH = {1: (1, 10, 10, 40, 40), 2: (2, 5, 5, 30, 50), 3: (3, 0, 0, 60, 60)}


@pytest.fixture
def lpirc_folder(tmp_path):
    (tmp_path / "images").mkdir()
    for n, colour in zip(TRUTH, ["red", "green", "blue"], strict=True):
        Image.new("RGB", (64, 64), colour).save(tmp_path / "images" / f"{n}.jpg")
    rows = [f"{n} {label} 1.0 {x0} {y0} {x1} {y1}" for n, (label, x0, y0, x1, y1) in TRUTH.items()]
    (tmp_path / "ground_truth.csv").write_text("\n".join(rows) + "\n")
    return tmp_path


def _post(url: str, path: str, fields) -> tuple[int, bytes]:
    data = urllib.parse.urlencode(fields, doseq=True).encode()
    try:
        with urllib.request.urlopen(url + path, data=data, timeout=5) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


@pytest.mark.slow
def test_a_client_plays_a_session_and_requests_past_the_limit_get_401(lpirc_folder, tmp_path):
    images = load_referee_set(str(lpirc_folder), None, None, seed=7)
    assert images.order == shuffle_in_groups(3, 7)
    epoch = time.monotonic()
    profile = PowerProfile(idle_watts=2.0, volts=12.0)
    with Wt310Simulator(profile, epoch=epoch) as simulator, Wt310Meter(simulator.resource) as meter:
        referee = Referee(images, time_limit=1.5, meter=meter)
        threading.Thread(target=referee.serve_forever, daemon=True).start()
        url = referee.url
        try:
            assert _post(url, "/image", {"token": "nonsense", "image_name": 1})[0] == 401
            status, token = _post(url, "/login", {"username": "team", "password": ""})
            assert status == 200
            token = token.decode()
            assert _post(url, "/login", {"username": "team", "password": ""})[1].decode() == token  # same clock
            assert _post(url, "/no_of_images", {"token": token}) == (200, b"3")
            assert _post(url, "/image", {"token": token, "image_name": 4})[0] == 406
            originals = {(lpirc_folder / "images" / f"{n}.jpg").read_bytes(): n for n in TRUTH}
            served = {}
            for index in (1, 2, 3):
                status, jpeg = _post(url, "/image", {"token": token, "image_name": index})
                assert status == 200
                served[originals[jpeg]] = index
            # Answer images 1 and 2 exactly, in one post (fields repeat), and image 3 with a wrong class.
            posts = [(served[n], *TRUTH[n]) for n in (1, 2)]
            fields = {
                "token": token,
                "image_name": [p[0] for p in posts],
                "CLASS_ID": [p[1] for p in posts],
                "confidence": [0.9, 0.8],
                "xmin": [p[2] for p in posts],
                "ymin": [p[3] for p in posts],
                "xmax": [p[4] for p in posts],
                "ymax": [p[5] for p in posts],
            }
            time.sleep(0.3)  # so that a 0.2 s limit would have missed the post
            assert _post(url, "/result", fields)[0] == 200
            mismatched = dict(fields, confidence=[0.9])
            assert _post(url, "/result", mismatched)[0] == 406
            time.sleep(1.4)  # past the limit
            late = {"token": token, "image_name": served[3], "CLASS_ID": 3, "confidence": 1.0}
            late |= {"xmin": 0, "ymin": 0, "xmax": 60, "ymax": 60}
            assert _post(url, "/result", late)[0] == 401
            assert _post(url, "/image", {"token": token, "image_name": 1})[0] == 401
            assert _post(url, "/no_of_images", {"token": token})[0] == 401
            assert _post(url, "/help", {})[0] == 401  # every request after the limit
            assert referee.finished.wait(2)
        finally:
            referee.shutdown()
            referee.server_close()
    summary = save_session(referee, tmp_path / "results", "now")
    # Classes 1 and 2 found, class 3 never answered in time: mAP (1 + 1 + 0) / 3.
    assert summary["map"]["map"] == pytest.approx(2 / 3)
    assert summary["ended_by"] == "time limit" and summary["results"] == 2
    energy = summary["energy"]
    assert energy["source"] == "sim"
    assert energy["joules"] == pytest.approx(2.0 * 1.5, rel=0.15)  # metered from login to the limit
    assert summary["score"]["value"] == pytest.approx((2 / 3) / energy["wh"])
    saved = json.loads((tmp_path / "results" / summary["run_id"] / "summary.json").read_text())
    assert saved["map"]["map"] == pytest.approx(2 / 3)
    assert (tmp_path / "results" / summary["run_id"] / "results.csv").read_text().count("\n") == 2
    # lpirc-score reads the session back; a time limit before the post leaves nothing found and less energy.
    whole = score_run(tmp_path / "results" / summary["run_id"])
    assert whole.accuracy == pytest.approx(2 / 3) and whole.energy_source == "sim"
    early = score_run(tmp_path / "results" / summary["run_id"], limit=0.2)
    assert early.accuracy == 0.0 and early.wh < whole.wh


def test_the_referee_refuses_a_non_local_bind_unless_asked(lpirc_folder):
    command = [
        sys.executable,
        "-m",
        "harness.cli",
        "lpirc",
        "referee",
        "--dataset",
        str(lpirc_folder),
        "--time-limit",
        "5",
    ]
    refused = subprocess.run([*command, "--host", "0.0.0.0"], capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2
    assert "--allow-remote" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    no_password = subprocess.run(
        [*command, "--host", "0.0.0.0", "--allow-remote"], capture_output=True, text=True, timeout=60
    )
    assert no_password.returncode == 2 and "--password" in no_password.stderr


def test_harness_referee_command_serves_a_session_until_logout(lpirc_folder, tmp_path):
    results = tmp_path / "sessions"
    command = [sys.executable, "-m", "harness.cli", "lpirc", "referee", "--dataset", str(lpirc_folder)]
    command += ["--time-limit", "30", "--port", "0", "--seed", "5", "--linger", "0"]
    command += ["--results", str(results), "--json"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = process.stdout.readline().split()[2].rstrip(":")
        token = _post(url, "/login", {"username": "board", "password": ""})[1].decode()
        assert _post(url, "/verify", {"token": token})[0] == 200
        label, *corners = TRUTH[1]
        jpeg = (lpirc_folder / "images" / "1.jpg").read_bytes()
        index = next(n for n in (1, 2, 3) if _post(url, "/image", {"token": token, "image_name": n})[1] == jpeg)
        fields = {"token": token, "image_name": index, "CLASS_ID": label, "confidence": 0.5}
        fields |= dict(zip(("xmin", "ymin", "xmax", "ymax"), corners, strict=True))
        assert _post(url, "/result", fields)[0] == 200
        assert _post(url, "/logout", {"token": token})[0] == 200
        out, err = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 0, err
    summary = json.loads(out[out.index("{") :])
    assert summary["ended_by"] == "logout" and summary["order_seed"] == 5
    assert summary["map"]["map"] == pytest.approx(1 / 3) and summary["energy"] is None
    assert (results / summary["run_id"] / "truth.csv").is_file()


class _ScriptedMeter(Meter):
    """A meter whose start or stop fails on request, or that reads 0 W."""

    kind = "scripted"

    def __init__(self, fail_start=False, fail_stop=False):
        self.fail_start, self.fail_stop, self.closed = fail_start, fail_stop, False

    def start(self):
        if self.fail_start:
            raise LinkError("scripted meter did not answer")
        self.started = time.monotonic()

    def stop(self):
        if self.fail_stop:
            raise LinkError("scripted meter stopped answering")
        return self.samples()

    def samples(self):
        t = [self.started, time.monotonic()]
        return PowerTrace(t, [3.3, 3.3], [0.0, 0.0], [0.0, 0.0], source="sim", meter="scripted")

    def close(self):
        self.closed = True


def test_a_meter_failing_at_stop_still_ends_the_session(lpirc_folder, tmp_path):
    images = load_referee_set(str(lpirc_folder), None, None, seed=1)
    referee = Referee(images, time_limit=30, meter=_ScriptedMeter(fail_stop=True))
    try:
        assert referee.login("team", "")
        referee.finish("logout")
        assert referee.finished.is_set() and isinstance(referee.meter_error, LinkError)
    finally:
        referee.server_close()
    summary = save_session(referee, tmp_path, "now")
    assert summary["ended_by"] == "logout" and summary["energy"] is None


def test_a_meter_failing_at_login_leaves_no_session(lpirc_folder):
    images = load_referee_set(str(lpirc_folder), None, None, seed=1)
    referee = Referee(images, time_limit=30, meter=_ScriptedMeter(fail_start=True))
    try:
        assert referee.login("team", "") is None
        assert referee.session is None and referee.finished.is_set()
        assert isinstance(referee.meter_error, LinkError)
    finally:
        referee.server_close()


def test_results_arriving_after_the_session_ended_are_not_kept(lpirc_folder):
    images = load_referee_set(str(lpirc_folder), None, None, seed=1)
    referee = Referee(images, time_limit=30)
    try:
        referee.login("team", "")
        session = referee.session
        box = Box(1, 1, 1.0, 10, 10, 40, 40)
        assert referee.store(session, [box])
        referee.finish("logout")  # e.g. the timer firing between a post's checks and its append
        assert not referee.store(session, [box])
        assert len(session.results) == 1
    finally:
        referee.server_close()


def _referee_command(lpirc_folder, tmp_path, monkeypatch, meter, *extra):
    """`harness referee --meter ...` in this process with a scripted meter; a client logs in and out."""
    monkeypatch.setattr("harness.energy.meter.open_live_meter", lambda spec, purpose: meter)
    started = []
    monkeypatch.setattr(referee_module.Referee, "serve_forever", _recording(started, Referee.serve_forever))
    argv = ["lpirc", "referee", "--dataset", str(lpirc_folder), "--port", "0", "--linger", "0", "--meter", "scripted:1"]
    argv += ["--results", str(tmp_path / "sessions"), *extra]
    outcome = []
    thread = threading.Thread(target=lambda: outcome.append(cli.main(argv)))
    thread.start()
    deadline = time.monotonic() + 30
    while not started and time.monotonic() < deadline:
        time.sleep(0.01)
    url = started[0].url
    token = _post(url, "/login", {"username": "board", "password": ""})[1].decode()
    assert _post(url, "/logout", {"token": token})[0] == 200
    thread.join(30)
    return outcome[0]


def _recording(started, serve_forever):
    def serve(self, *args, **kwargs):
        started.append(self)
        return serve_forever(self, *args, **kwargs)

    return serve


def test_the_referee_command_reports_a_meter_failure_as_a_link_error_after_saving(
    lpirc_folder, tmp_path, monkeypatch, capsys
):
    meter = _ScriptedMeter(fail_stop=True)
    assert _referee_command(lpirc_folder, tmp_path, monkeypatch, meter) == exits.LINK
    err = capsys.readouterr().err
    assert "power meter failed" in err and len(err.strip().splitlines()) == 1
    (saved,) = (tmp_path / "sessions").iterdir()
    assert json.loads((saved / "summary.json").read_text())["energy"] is None
    assert meter.closed


def test_the_referee_command_prints_a_session_with_zero_energy(lpirc_folder, tmp_path, monkeypatch, capsys):
    assert _referee_command(lpirc_folder, tmp_path, monkeypatch, _ScriptedMeter()) == 0
    assert "0 Wh (sim), score - (no energy)" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--meter", "csv:old.csv"], "cannot time the session"),
        (["--port", "70000"], "port number"),
        (["--linger", "-1"], "at least 0"),
        (["--time-limit", "nan"], "above 0"),
    ],
)
def test_bad_referee_arguments_are_one_line_and_exit_2(lpirc_folder, tmp_path, args, message):
    command = [sys.executable, "-m", "harness.cli", "lpirc", "referee", "--dataset", str(lpirc_folder), *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "results").exists()
