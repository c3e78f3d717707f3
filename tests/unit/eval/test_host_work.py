"""Host references on their own thread: ahead of the board, bounded, the same bytes as inline."""

import threading

import numpy as np
import pytest

from harness.eval import host_work
from harness.eval.host_work import HostReferences
from harness.model.dut import ModelOutputs
from harness.tensors import TensorSpec

SPEC = TensorSpec(9, (1, 2), 1.0, 0, 2)
COMPUTATION = ModelOutputs(SPEC, SPEC)


class Doubling:
    name = "double"

    def __init__(self, fail_at=None):
        self.calls, self.fail_at = [], fail_at
        self.threads = set()

    def run(self, tensor):
        index = int(tensor[0, 0])
        self.calls.append(index)
        self.threads.add(threading.current_thread().name)
        if index == self.fail_at:
            raise RuntimeError("the interpreter gave up")
        return (tensor * 2).astype(np.int8).tobytes()


TENSORS = [np.array([[i, 1]], np.int8) for i in range(50)]


def test_the_outputs_are_each_samples_own_computed_once_on_the_thread():
    reference = Doubling()
    order = list(range(50))
    with HostReferences([reference], COMPUTATION, TENSORS, order) as host:
        outputs = [host.outputs(i) for i in order]
    assert outputs == [{"double": bytes([2 * i, 2])} for i in order]
    assert sorted(reference.calls) == order and reference.threads == {"host references"}


def test_the_thread_stays_at_most_AHEAD_samples_ahead(monkeypatch):
    monkeypatch.setattr(host_work, "AHEAD", 4)
    reference = Doubling()
    with HostReferences([reference], COMPUTATION, TENSORS, list(range(50))) as host:
        while len(reference.calls) < 4:
            pass
        threading.Event().wait(0.2)  # it would go on now if it were unbounded
        assert len(reference.calls) == 4
        assert host.outputs(0) == {"double": bytes([0, 2])}


def test_a_sample_out_of_order_beyond_the_bound_is_computed_by_the_caller(monkeypatch):
    """A sharded run's board gave samples back: they arrive after samples the thread cannot reach."""
    monkeypatch.setattr(host_work, "AHEAD", 4)
    reference = Doubling()
    with HostReferences([reference], COMPUTATION, TENSORS, list(range(50))) as host:
        assert host.outputs(30) == {"double": bytes([60, 2])}  # no wait for the thread
        assert [host.outputs(i)["double"][0] for i in range(30)] == [2 * i for i in range(30)]
        assert host.outputs(31) == {"double": bytes([62, 2])}
    assert reference.calls.count(30) == 1


def test_a_reference_that_fails_fails_the_caller_with_its_own_error():
    with HostReferences([Doubling(fail_at=2)], COMPUTATION, TENSORS, list(range(50))) as host:
        host.outputs(0)
        host.outputs(1)
        with pytest.raises(RuntimeError, match="gave up"):
            host.outputs(2)


def test_no_references_no_thread():
    with HostReferences([], COMPUTATION, TENSORS, [0, 1]) as host:
        assert host.outputs(1) == {}
