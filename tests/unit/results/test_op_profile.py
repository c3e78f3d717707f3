"""An eval run's operator profile: its shares, by kind and per operator, taken from one place."""

import math

from hypothesis import given
from hypothesis import strategies as st

from harness.results.op_profile import OperatorProfile, OperatorTime

KINDS = st.sampled_from(["CONV_2D", "DEPTHWISE_CONV_2D", "ADD", "SOFTMAX", "RESHAPE"])
OPERATORS = st.lists(
    st.builds(OperatorTime, operator=KINDS, value=st.floats(0, 1e9, allow_nan=False)), min_size=1, max_size=40
)


def _profile(operators, total=None, run=None) -> OperatorProfile:
    return OperatorProfile(
        source="emulated",
        unit="instructions",
        board="qemu_m7",
        sample="s0",
        total=sum(op.value for op in operators) if total is None else total,
        operators=operators,
        operators_run=len(operators) if run is None else run,
    )


@given(OPERATORS, st.floats(1, 1e10))
def test_the_kinds_together_account_for_what_the_operators_do(operators, total):
    profile = _profile(operators, total)
    kinds = profile.by_kind
    assert sum(k.count for k in kinds) == len(operators)
    assert math.isclose(sum(k.share for k in kinds), profile.coverage, rel_tol=1e-9, abs_tol=1e-12)
    assert [k.value for k in kinds] == sorted((k.value for k in kinds), reverse=True)


def test_the_headline_names_the_costliest_kind_and_the_coverage():
    ops = [OperatorTime(operator=k, value=v) for k, v in [("CONV_2D", 300.0), ("ADD", 100.0), ("CONV_2D", 300.0)]]
    profile = _profile(ops, total=800.0, run=5)
    assert profile.headline() == (
        "CONV_2D (2 operators) takes 75% of the invoke (800 instructions); 3 operators timed cover 88% (emulated)"
    )
    assert profile.untimed == 2


def test_an_invoke_of_no_time_has_no_shares():
    profile = _profile([OperatorTime(operator="ADD", value=0.0)], total=0.0)
    assert profile.coverage is None and profile.by_kind[0].share is None
    assert "n/a" in profile.headline()
