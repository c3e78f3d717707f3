"""Every --protocol with every command that uses a board's session (eval with a meter, perf, profile, stream)
on the virtual board: it works, or it is refused in one line with exit code 2, no traceback and nothing
left behind. And the session interface both protocols implement, member by member."""

import inspect
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from harness.boards import Kind, get_board
from harness.device.drivers import DRIVERS, ConnectOptions, driver_for
from harness.energy.profile import PowerProfile
from harness.energy.wt310_sim import Wt310Simulator
from harness.errors import UserError
from harness.link.client import DeviceClient
from harness.link.eembc import EembcClient
from harness.link.registry import PROTOCOLS, session_type
from harness.link.roles import (
    ROLES,
    BaudSwitching,
    KeywordStreaming,
    LayerTracing,
    LinkTesting,
    Profiling,
    Recovery,
    refuse,
    require,
)
from harness.link.session import DeviceSession, Unsupported
from harness.tensors import TensorSpec
from tests.conftest import assert_refused_in_one_line, fixture_model

MODEL = ("--model", "wv_quality_k_2_c_3")
KEYWORDS = ("--model", "tflm_micro_speech")


def _harness(tmp_path, *args):
    command = [sys.executable, "-m", "harness", *args]
    return subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, env=os.environ.copy())


def _left_behind(tmp_path) -> list[str]:
    results = tmp_path / "results"
    return sorted(p.name for p in results.iterdir()) if results.is_dir() else []


@pytest.fixture(scope="module")
def meter():
    with Wt310Simulator(PowerProfile(idle_watts=0.5, volts=5.0)) as simulator:
        yield f"wt310:{simulator.resource}"


def _stream_wav(tmp_path) -> str:
    """Two seconds of silence: enough for the keyword pipeline to run its model."""
    from harness.audio.clips import write_clip

    fixture_model("tflm/audio_preprocessor_int8.tflite")
    write_clip(tmp_path / "s.wav", np.zeros(32000, np.int16), 16000)
    return "s.wav"


# command -> (its arguments, {protocol: None (works) or the refusal's text})
RESULTS = ("--results", "results")
MATRIX = {
    "eval --meter": (
        ("eval", *MODEL, "--subset", "distance_far", "--limit", "2", "--meter", "{meter}", "--json", *RESULTS),
        {"harness": None, "eembc": None},
    ),
    "perf --meter": (
        ("perf", *MODEL, "--runs", "3", "--warmups", "1", "--meter", "{meter}", "--window-seconds", "0.5", "--json"),
        {"harness": None, "eembc": None},
    ),
    "profile": (
        ("profile", *MODEL),
        {"harness": "no per-operator timer", "eembc": "--protocol eembc: the DUT protocol times whole inferences"},
    ),
    "stream": (
        ("stream", "run", *KEYWORDS, "--wav", "{wav}", "--json", *RESULTS),
        {"harness": None, "eembc": "--protocol eembc: the DUT protocol has no audio streaming"},
    ),
}


@pytest.mark.parametrize("protocol", ["harness", "eembc"])
@pytest.mark.parametrize("command", list(MATRIX))
def test_every_protocol_with_every_command_works_or_is_refused_in_one_line(
    tmp_path, small_model, meter, command, protocol
):
    arguments, outcomes = MATRIX[command]
    wav = _stream_wav(tmp_path) if command == "stream" else None
    arguments = [a.format(meter=meter, wav=wav) for a in arguments]
    done = _harness(tmp_path, *arguments, "--protocol", protocol)
    refusal = outcomes[protocol]
    if refusal is not None:
        assert_refused_in_one_line(done, refusal)
        assert _left_behind(tmp_path) == []
        return
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    result = json.loads(done.stdout)
    if command == "perf --meter":
        assert len(result["runs"]) == 3 and result["source"] == "sim" and result["unit"] == "µs"
        # BENCH spans on ours, one `infer N 0` per window on the DUT protocol: 0.5 W over the device's time.
        energy = result["energy"]
        assert energy["source"] == "sim" and len(energy["windows"]) == 5
        assert all(w["device_seconds"] >= 0.5 for w in energy["windows"])
        assert energy["mean_watts"] == pytest.approx(0.5, rel=0.01)
        return
    (run,) = _left_behind(tmp_path)  # one finished run, no .partial folder
    assert not run.startswith(".") and result["run_dir"].endswith(run)
    if command == "eval --meter":
        energy = result["energy"]
        # Both protocols report the device's own invoke time: the windows are device-timed.
        assert energy["windows"] == "device-timed" and energy["inferences"] == 2
        assert energy["uj_per_inference"]["median"] > 0
        assert (tmp_path / "results" / run / "energy.parquet").is_file()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--faults", "drop=1e-3"), "--faults needs harness firmware"),
        (("--switch-baud", "921600"), "cannot switch the baud rate"),
    ],
)
def test_eembc_refuses_what_its_link_cannot_do_before_the_board_starts(tmp_path, small_model, extra, message):
    done = _harness(tmp_path, "eval", *MODEL, "--limit", "2", "--protocol", "eembc", *extra, *RESULTS)
    assert_refused_in_one_line(done, message)
    assert _left_behind(tmp_path) == []


def _members(declared: type) -> set[str]:
    return {name for name, value in vars(declared).items() if getattr(value, "__isabstractmethod__", False)}


def test_both_protocols_implement_every_member_of_the_session_and_ours_every_role():
    members = DeviceSession.__abstractmethods__
    assert {"run_stream", "bench", "back_to_back"} <= members
    roles = {role: _members(role) for role in ROLES}
    assert {
        "profile",
        "layer_trace",
        "layer_tensor",
        "stream_start",
        "stream_audio",
        "echo",
        "perf",
        "switch_baud",
        "reconnect",
    } == set().union(*roles.values())
    for session, declared in ((DeviceClient, (DeviceSession, *ROLES)), (EembcClient, (DeviceSession,))):
        assert not session.__abstractmethods__, session
        for owner in declared:
            for name in _members(owner):
                ours = inspect.signature(getattr(owner, name)).parameters
                theirs = inspect.signature(getattr(session, name)).parameters
                assert list(theirs)[: len(ours)] == list(ours), (session.__name__, name)
    spec = TensorSpec(3, (1, 4), 0.5, 2, 4)
    for session in (DeviceClient(None), EembcClient(None, spec, spec)):
        for attribute in ("port", "info", "stats", "firmware", "last_invoke", "last_device_window"):
            assert hasattr(session, attribute), attribute
    assert set(PROTOCOLS) == {"harness", "eembc"} and all(session_type(p).protocol == p for p in PROTOCOLS)


def test_what_the_eembc_protocol_lacks_is_a_domain_error_not_an_attribute_error():
    spec = TensorSpec(3, (1, 4), 0.5, 2, 4)
    client = EembcClient(None, spec, spec)
    lacks = (Profiling, LayerTracing, KeywordStreaming, LinkTesting, BaudSwitching, Recovery)
    assert set(lacks) == set(EembcClient.LACKS) == set(ROLES)
    for role in lacks:
        assert not isinstance(client, role)
        assert not any(hasattr(client, name) for name in _members(role))  # no stubs: it simply lacks them
        with pytest.raises(Unsupported, match="'protocol' eembc"):
            require(client, role)
        with pytest.raises(Unsupported, match="'protocol' eembc"):
            refuse(EembcClient, role)
    refuse(DeviceClient, *ROLES)  # ours has every role
    assert require(DeviceClient(None), Profiling) is not None
    with pytest.raises(ValueError, match="not a role"):
        refuse(DeviceClient, DeviceSession)


def test_one_driver_per_board_kind_and_labgrid_when_a_place_is_given(small_model):
    assert set(DRIVERS) == {*Kind.__args__, "labgrid"}
    assert all(set(driver.protocols) <= set(PROTOCOLS) for driver in DRIVERS.values())
    sim, qemu, real = get_board("sim"), get_board("qemu_m7"), get_board("nucleo_h743")
    assert type(driver_for(sim, None)).kind == "virtual"
    assert type(driver_for(real, None, ConnectOptions(labgrid_place="lab1"))).kind == "labgrid"
    with pytest.raises(UserError, match="needs a real board"):
        driver_for(sim, None, ConnectOptions(labgrid_place="lab1"))
    with pytest.raises(UserError, match="needs a model"):  # hosted HALs build the card's DUT too
        driver_for(get_board("hal_stm32duino"), None, ConnectOptions(protocol="eembc"))
    with pytest.raises(UserError, match="needs a model"):  # QEMU builds the card's DUT: the card's model
        driver_for(qemu, None, ConnectOptions(protocol="eembc"))
    with pytest.raises(UserError, match="needs a model"):
        driver_for(sim, None, ConnectOptions(protocol="eembc"))
    with pytest.raises(UserError, match="not QEMU boards"):
        driver_for(qemu, None, ConnectOptions(faults=object()))
    assert driver_for(sim, None).flash() is None  # nothing to flash: nothing started
