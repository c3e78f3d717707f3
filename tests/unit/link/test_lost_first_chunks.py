"""An input whose first chunks are lost while the device still holds a whole earlier input, its INVOKE lost too
(one-slot pipelining sends the next input's chunks right behind the INVOKE). The chunks that do arrive land on
the earlier input's stream: the device either cannot decode them (a coded stream, BAD_PAYLOAD) or acknowledges
what it holds of the earlier one. Either way the host must start the input afresh and every result must be the
sequential one. Seen once in CI through the fault proxy as a fatal BAD_PAYLOAD."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.device.sim_board import LinkEmulation
from harness.link.protocol import Msg
from tests.fake_runner import ChecksumRunner, PortProxy, core_on_pty, expected_output

HEIGHT, WIDTH, CHANNELS = 24, 32, 3
FRAME_OVERHEAD = 12


def _image_runner() -> ChecksumRunner:
    runner = ChecksumRunner(HEIGHT * WIDTH * CHANNELS, 4)
    tensor = runner.model_info.input
    tensor.rank = 4
    for axis, size in enumerate((1, HEIGHT, WIDTH, CHANNELS)):
        tensor.dims[axis] = size
    return runner


def _images(count: int, seed: int) -> list[bytes]:
    """Smooth images with noise: the row codec shrinks them, to different lengths."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:HEIGHT, 0:WIDTH]
    images = []
    for i in range(count):
        grey = (3 + i) * x + 2 * y + rng.normal(0, 4 + 3 * i, (HEIGHT, WIDTH))
        pixels = np.stack([grey, grey + 10 * i, grey + 20], axis=2)
        images.append(np.clip(pixels, 0, 255).astype(np.uint8).tobytes())
    return images


def _frames(data: bytes) -> list[bytes]:
    frames = []
    while data:
        size = FRAME_OVERHEAD + int.from_bytes(data[6:8], "little")
        frames.append(data[:size])
        data = data[size:]
    return frames


class _LoseFrames(PortProxy):
    """Drops the frames written that `lose(index, frame)` picks (index counts the frames written, from 0)."""

    def __init__(self, port, lose):
        super().__init__(port)
        self.lose, self.written, self.lost = lose, 0, []

    def write(self, data):
        data = bytes(data)
        kept = []
        for frame in _frames(data) if data[:2] == b"\xa5\x5a" else [data]:
            if self.lose(self.written, frame):
                self.lost.append(frame[2])
            else:
                kept.append(frame)
            self.written += 1
        self._port.write(b"".join(kept))
        return len(data)


def _after_invoke(number: int, chunks: int):
    """The number-th INVOKE and the first `chunks` LOAD_INPUT frames after it."""
    state = {"invokes": 0, "to_lose": 0}

    def lose(_index, frame):
        if frame[2] == Msg.INVOKE:
            state["invokes"] += 1
            if state["invokes"] - 1 == number:
                state["to_lose"] = chunks
                return True
        if state["to_lose"] and frame[2] == Msg.LOAD_INPUT:
            state["to_lose"] -= 1
            return True
        return False

    return lose


def _stream(monkeypatch, forms: str, lose, seed: int, slots: int = 1):
    monkeypatch.setenv("HARNESS_INPUT_FORMS", "raw" if forms == "raw" else "smallest")
    runner = _image_runner()
    emulation = LinkEmulation(921600, 0, 20, input_slots=slots)
    data = _images(4, seed)
    wrap = lambda port, _: _LoseFrames(port, lose)  # noqa: E731
    with core_on_pty(runner, emulation=emulation, wrap=wrap, rx_frame=300, rx_buffer=4096) as (_, client):
        client.hello()
        results = [r.output for r in client.run_stream(data)]
        assert (client.stats.inputs_encoded > 0) == (forms == "smallest")
    assert results == [expected_output(d, 4) for d in data]
    return client


@pytest.mark.parametrize("forms", ["raw", "smallest"])
@pytest.mark.parametrize("lost_chunks", [1, 2, 3])
@pytest.mark.parametrize("lost_invoke", [0, 1, 2])
def test_an_input_landing_on_an_earlier_inputs_stream_starts_afresh(monkeypatch, forms, lost_chunks, lost_invoke):
    client = _stream(monkeypatch, forms, _after_invoke(lost_invoke, lost_chunks), seed=lost_chunks)
    assert client.port.lost == [Msg.INVOKE] + [Msg.LOAD_INPUT] * lost_chunks
    assert client.stats.reruns + client.stats.go_backs >= 1  # the loss was noticed, not stepped over


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    lost=st.sets(st.integers(min_value=1, max_value=40), min_size=1, max_size=3),
    forms=st.sampled_from(["raw", "smallest"]),
    slots=st.sampled_from([1, 2]),
)
def test_any_lost_frames_leave_the_results_the_sequential_ones(monkeypatch, lost, forms, slots):
    """Frame 0 is HELLO's; any others lost (INVOKEs, chunks, READ_OUTPUTs, go-back markers) cost time only."""
    client = _stream(monkeypatch, forms, lambda index, _frame: index in lost, seed=min(lost), slots=slots)
    assert len(client.port.lost) == len(lost & set(range(client.port.written)))
