"""The comparison behind `harness debug layers`: a board's digests against the host's operator outputs, the
departing operators' bytes fetched in order while the budget lasts, their differences counted (hypothesis over
generated graphs, integer and float, with NaNs)."""

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.eval import layer_diff
from harness.link.layer_trace import LayerOutput, LayerRecord
from harness.link.protocol import MalformedPayload
from harness.link.roles import LayerTracing
from harness.model.layer_refs import OperatorOutputs, TensorOutput
from harness.results.layer_trace import STEPS
from harness.tensor_digest import tensor_digest

BOARD = SimpleNamespace(id="sim", latency_source="sim")


class FakeBoard(LayerTracing):
    """A board whose operators computed `on_board` (arrays per operator): it traces and dumps them."""

    def __init__(self, on_board: list[list[np.ndarray]]):
        self.on_board, self.dumped = on_board, 0

    def layer_trace(self, data: bytes) -> list[LayerRecord]:
        return [
            LayerRecord(i, "OP", tuple(LayerOutput(10 * i + k, tensor_digest(a)) for k, a in enumerate(arrays)))
            for i, arrays in enumerate(self.on_board)
        ]

    def layer_tensor(self, data: bytes, op_index: int, output: int = 0) -> bytes:
        array = self.on_board[op_index][output]
        self.dumped += array.nbytes
        return array.tobytes()


def _host(arrays: list[list[np.ndarray]]) -> list[OperatorOutputs]:
    return [
        OperatorOutputs(i, "OP", tuple(TensorOutput(10 * i + k, f"t{i}.{k}", a.shape, a) for k, a in enumerate(ops)))
        for i, ops in enumerate(arrays)
    ]


def _traced(monkeypatch, host, on_board, budget=1 << 20):
    monkeypatch.setattr(layer_diff, "operator_outputs", lambda model, data: _host(host))
    board = FakeBoard(on_board)
    return layer_diff.trace_layers(board, BOARD, "m", b"", b"", "s0", budget), board


GRAPHS = st.lists(
    st.tuples(st.sampled_from([np.int8, np.int16, np.float32]), st.integers(1, 40), st.integers(0, 2**32 - 1)),
    min_size=1,
    max_size=6,
)


def _arrays(graph) -> list[list[np.ndarray]]:
    made = []
    for dtype, size, seed in graph:
        rng = np.random.default_rng(seed)
        if np.issubdtype(dtype, np.floating):
            made.append([rng.normal(size=size).astype(dtype)])
        else:
            made.append([rng.integers(-100, 100, size=size).astype(dtype)])
    return made


@settings(max_examples=60, deadline=None)
@given(GRAPHS, st.data())
def test_the_first_departure_is_the_first_changed_operator_and_its_counts_are_exact(graph, data):
    host = _arrays(graph)
    on_board = [[a.copy() for a in ops] for ops in host]
    changed = sorted(data.draw(st.sets(st.integers(0, len(host) - 1), max_size=len(host))))
    expected = {}
    for op in changed:
        array = on_board[op][0]
        positions = data.draw(st.sets(st.integers(0, array.size - 1), min_size=1, max_size=array.size))
        by = data.draw(st.integers(1, 20))
        for p in positions:
            array[p] = array[p] + by
        expected[op] = (len(positions), float(by))
    with pytest.MonkeyPatch.context() as patch:
        trace, _ = _traced(patch, host, on_board)
    first = trace.first_departure
    assert (first.index if first else None) == (changed[0] if changed else None)
    for layer in trace.layers:
        assert layer.equal == (layer.index not in expected)
        if layer.index in expected:
            count, by = expected[layer.index]
            assert layer.differing == count
            assert layer.largest == pytest.approx(by, rel=1e-3) or layer.unit != STEPS


def test_bytes_are_fetched_in_order_until_the_budget_is_spent(monkeypatch):
    host = [[np.zeros(100, np.int8)] for _ in range(3)]
    on_board = [[np.ones(100, np.int8)] for _ in range(3)]
    trace, board = _traced(monkeypatch, host, on_board, budget=250)
    assert [layer.fetched for layer in trace.layers] == [True, True, False]
    assert trace.fetched_bytes == board.dumped == 200
    assert "not fetched" in trace.layers[2].difference_text()


def test_a_nan_on_one_side_is_counted_and_never_measured(monkeypatch):
    host = [[np.array([1.0, np.nan, 3.0], np.float32)]]
    on_board = [[np.array([np.nan, np.nan, 3.5], np.float32)]]
    trace, _ = _traced(monkeypatch, host, on_board)
    layer = trace.layers[0]
    assert layer.differing == 2 and layer.largest == pytest.approx(0.5) and np.isfinite(layer.largest)


def test_a_board_that_ran_another_graph_is_a_malformed_answer(monkeypatch):
    with pytest.raises(MalformedPayload, match="traced 2 operators, the model has 1"):
        _traced(monkeypatch, [[np.zeros(2, np.int8)]], [[np.zeros(2, np.int8)]] * 2)
