"""The default model on the virtual board: its float32 input (integers 0..255) crosses the wire as the row codec's
stream of one byte per element, decoded and widened on the board (harness/link/input_forms.py, row_codec.py); the
outputs are those of the raw input."""

from tests.conftest import assert_refused_in_one_line
from tests.input_form_runs import assert_widened_as_raw, eval_rows_and_link, run_eval

ARGS = ("--board", "sim", "--limit", "6")


def test_default_model_coded_on_the_host_and_decoded_on_the_board_gives_the_same_outputs_in_fewer_bytes(
    tmp_path, vww_model
):
    raw = eval_rows_and_link(tmp_path / "raw", "raw", *ARGS)
    coded = eval_rows_and_link(tmp_path / "smallest", "smallest", *ARGS)
    assert len(coded[0]) == 6
    assert_widened_as_raw(raw, coded, min_ratio=5.0)
    per_sample, raw_per_sample = coded[1]["input_wire_bytes"] / 6, raw[1]["input_wire_bytes"] / 6
    # Widened alone, a sample is 27,648 bytes and its framing; the demo images code to about half of that.
    assert per_sample < 27_648 * 0.75 and 110_592 < raw_per_sample < 110_592 * 1.02


def test_an_unknown_input_forms_setting_is_refused_in_one_line(tmp_path):
    done = run_eval(tmp_path / "bad", "zip", *ARGS)
    assert_refused_in_one_line(done, "HARNESS_INPUT_FORMS is 'zip'", "raw or smallest")
    assert not (tmp_path / "bad").exists() or not any((tmp_path / "bad").iterdir())


def test_coded_inputs_through_a_damaging_link_give_the_clean_outputs(tmp_path, vww_model):
    """Chunks lost, damaged and sent again (the decoder resumes where it stopped), and board resets, with offsets
    counted in wire bytes."""
    clean_rows, _ = eval_rows_and_link(tmp_path / "clean", "smallest", *ARGS)
    faults = "drop=1e-3,corrupt=1e-3,dup=1e-4,reset-every=5"
    rows, link = eval_rows_and_link(tmp_path / "faulty", "smallest", *ARGS, "--faults", faults)
    assert [r["device_output"] for r in rows] == [r["device_output"] for r in clean_rows]
    # The proxy reset the board (the host may meet the reset's notice, or lose it and find its input gone).
    assert link["resends"] > 0 and link["faults_injected"]["resets"] >= 1 and link["inputs_encoded"] >= 6
    assert link["input_tensor_bytes"] == link["inputs_encoded"] * 110_592
