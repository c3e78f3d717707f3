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

from harness.energy.profile import PowerProfile
from harness.energy.wt310 import Wt310Meter
from harness.energy.wt310_sim import Wt310Simulator
from harness.lpirc.order import shuffle_in_groups
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
    command = [sys.executable, "-m", "harness.cli", "referee", "--dataset", str(lpirc_folder), "--time-limit", "5"]
    refused = subprocess.run([*command, "--host", "0.0.0.0"], capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2
    assert "--allow-remote" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    no_password = subprocess.run(
        [*command, "--host", "0.0.0.0", "--allow-remote"], capture_output=True, text=True, timeout=60
    )
    assert no_password.returncode == 2 and "--password" in no_password.stderr


def test_harness_referee_command_serves_a_session_until_logout(lpirc_folder, tmp_path):
    results = tmp_path / "sessions"
    command = [sys.executable, "-m", "harness.cli", "referee", "--dataset", str(lpirc_folder)]
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
