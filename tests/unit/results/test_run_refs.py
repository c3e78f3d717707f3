"""Runs named briefly (harness/results/run_refs.py): an id, a unique prefix, latest, latest~N, or the number
`harness runs list` shows; an ambiguous prefix or a name of no run is refused in one line."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.errors import UserError
from harness.results.run_refs import resolve

RUN_IDS = st.lists(
    st.from_regex(r"\d{8}T\d{6}Z-[a-z][a-z0-9_]{0,8}-sim-[0-9a-f]{4}", fullmatch=True),
    min_size=1,
    max_size=8,
    unique=True,
)


def _never():
    raise AssertionError("the list is read only for a number or latest")


@given(RUN_IDS, st.data())
def test_a_run_is_named_by_its_number_and_by_latest_n(ids, data):
    listed = sorted(ids)  # oldest first, as harness runs list numbers them
    n = data.draw(st.integers(1, len(listed)))
    assert resolve(str(n), ids, lambda: listed, "results") == listed[n - 1]
    assert resolve(f"latest~{len(listed) - n}", ids, lambda: listed, "results") == listed[n - 1]
    assert resolve("latest", ids, lambda: listed, "results") == listed[-1]
    assert resolve("latest~0", ids, lambda: listed, "results") == listed[-1]


@given(RUN_IDS, st.data())
def test_an_id_and_each_of_its_unique_prefixes_name_it(ids, data):
    run_id = data.draw(st.sampled_from(ids))
    assert resolve(run_id, ids, _never, "results") == run_id
    cut = data.draw(st.integers(1, len(run_id)))
    prefix = run_id[:cut]
    sharing = [other for other in ids if other.startswith(prefix)]
    if prefix.isdigit() and len(prefix) <= 6:
        return  # a number: the list's own, tested above
    if sharing == [run_id]:
        assert resolve(prefix, ids, _never, "results") == run_id
    else:
        with pytest.raises(UserError) as refused:
            resolve(prefix, ids, _never, "results")
        (line,) = str(refused.value).splitlines()
        assert f"{len(sharing)} runs in results begin so" in line and "give more of the id" in line
        assert min(sharing) in line


def test_an_ambiguous_prefix_names_a_few_candidates_in_one_line():
    ids = [f"20261203T1200{n:02d}Z-m-sim-00{n:02d}" for n in range(6)]
    with pytest.raises(UserError) as refused:
        resolve("20261203T", ids, _never, "results")
    line = str(refused.value)
    assert "6 runs in results begin so" in line and ids[0] in line and ids[2] in line and ids[3] not in line
    assert line.count("\n") == 0 and "…" in line


def test_an_exact_id_wins_over_a_number_and_over_latest():
    assert resolve("1", ["1", "10"], _never, "r") == "1"
    assert resolve("latest", ["latest", "latest-x"], _never, "r") == "latest"


def test_a_long_number_is_a_prefix_of_an_id_not_a_list_number():
    ids = ["20261203T120000Z-m-sim-0000", "20251203T120000Z-m-sim-0000"]
    assert resolve("2026", ids, lambda: ids, "r") == ids[0]  # 2026 is past the list's 2 runs: a prefix
    assert resolve("20261203", ids, _never, "r") == ids[0]


@pytest.mark.parametrize(
    "spec, words",
    [
        ("3", ["no run numbered 3", "numbers 2 runs in r"]),
        ("0", ["no run numbered 0"]),
        ("latest~2", ["latest~2 names no run", "r holds 2 runs", "latest~0 … latest~1"]),
    ],
)
def test_a_number_or_latest_past_the_list_is_refused_in_one_line(spec, words):
    ids = ["a-0001", "b-0002"]
    with pytest.raises(UserError) as refused:
        resolve(spec, ids, lambda: ids, "r")
    line = str(refused.value)
    assert "\n" not in line and all(word in line for word in words), line


def test_latest_of_no_runs_says_there_are_none():
    with pytest.raises(UserError, match="latest names no run: r holds 0 runs"):
        resolve("latest", [], lambda: [], "r")


def test_a_name_of_no_run_is_left_to_the_caller():
    assert resolve("zz", ["a-0001"], _never, "r") is None


def test_latest_for_resume_counts_its_own_runs():
    unfinished, finished = ["u1", "u2"], ["f1"]
    assert resolve("latest", unfinished, lambda: finished, "r", newest=lambda: unfinished) == "u2"
    assert resolve("1", unfinished, lambda: finished, "r", newest=lambda: unfinished) == "f1"


def test_resume_names_an_unfinished_run_by_latest_or_a_prefix(tmp_path):
    from harness.results.runs import unfinished_name

    older, newer = "20261201T100000Z-m-sim-aaaa", "20261202T100000Z-m-sim-bbbb"
    for run_id in (older, newer):
        (tmp_path / f".{run_id}.partial").mkdir()
    (tmp_path / "20261130T100000Z-m-sim-cccc").mkdir()  # a finished run, by its exact id: resume says it finished
    assert unfinished_name("latest", tmp_path) == newer
    assert unfinished_name("latest~1", tmp_path) == older
    assert unfinished_name("20261201", tmp_path) == older
    assert unfinished_name("20261130T100000Z-m-sim-cccc", tmp_path) == "20261130T100000Z-m-sim-cccc"
    with pytest.raises(UserError, match=r"2 runs in .* begin so"):
        unfinished_name("202612", tmp_path)
    with pytest.raises(UserError, match=r"latest~2 names no run: .* holds 2 unfinished runs"):
        unfinished_name("latest~2", tmp_path)
    assert unfinished_name("nosuch", tmp_path) is None
