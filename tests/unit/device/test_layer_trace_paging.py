"""The host pages through a layer trace and an operator's tensor when one answer frame cannot hold them, and a
runner that cannot trace is refused in one line."""

import numpy as np
import pytest

from harness.device.sim_board import TflmRunner
from harness.link.session import Unsupported
from harness.tensor_digest import tensor_digest
from tests.fake_runner import ChecksumRunner, core_on_pty

SMALL_FRAME = 256  # a little more than HELLO needs: four trace records, or 244 tensor bytes, per answer


def test_a_trace_paged_through_small_frames_is_the_trace_of_one_frame(small_model):
    runner = TflmRunner(small_model.read_bytes(), 1 << 20)
    data = np.random.default_rng(11).integers(0, 256, runner.input_shape, dtype=np.uint8).tobytes()
    with core_on_pty(runner, tx_frame=4108, timeout=5) as (_, client):
        whole = client.layer_trace(data)
        output = client.run(data).output
    with core_on_pty(runner, tx_frame=SMALL_FRAME, timeout=5) as (_, client):
        paged = client.layer_trace(data)
        tensor = client.layer_tensor(data, 1, 0)
        assert client.run(data).output == output  # a traced invoke leaves the model as it was
    assert len(whole) == 13 and sum(len(r.op_type) + 41 for r in whole) > SMALL_FRAME  # several pages
    assert paged == whole and [r.index for r in paged] == list(range(13))
    digest = paged[1].outputs[0].digest
    assert len(tensor) == digest.bytes > SMALL_FRAME
    assert tensor_digest(np.frombuffer(tensor, np.int8)).matches(digest)


def test_a_runner_without_a_trace_is_refused_in_one_line():
    with core_on_pty(ChecksumRunner(16, 4)) as (_, client), pytest.raises(Unsupported) as refused:
        client.layer_trace(bytes(16))
    assert "cannot trace layers" in str(refused.value) and "\n" not in str(refused.value)


def test_an_operator_the_model_lacks_is_a_user_error(small_model):
    from harness.errors import UserError

    runner = TflmRunner(small_model.read_bytes(), 1 << 20)
    with core_on_pty(runner, timeout=5) as (_, client), pytest.raises(UserError, match="no such operator"):
        client.layer_tensor(bytes(runner.model_info.input.bytes), 99, 0)
