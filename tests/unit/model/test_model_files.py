"""Damaged or unusual .tflite files and unreadable model files: one line naming the problem, exit 2."""

import json
import os

import pytest

from tests.conftest import assert_refused_in_one_line
from tests.forked_cli import run_harness_command
from tests.model_surgery import mutate


def _inspect(tmp_path, *args):
    return run_harness_command(["models", "inspect", *args], cwd=tmp_path, env=os.environ.copy(), timeout=300)


def _first_op(graph):
    return graph.operators[0]


DAMAGE = {
    "buffer_index": lambda m, g: setattr(g.tensors[-1], "buffer", len(m.buffers) + 5),
    "opcode_index": lambda m, g: setattr(_first_op(g), "opcodeIndex", len(m.operatorCodes) + 3),
    "op_input_index": lambda m, g: _first_op(g).inputs.__setitem__(0, len(g.tensors) + 7),
    "op_output_index": lambda m, g: _first_op(g).outputs.__setitem__(0, len(g.tensors) + 7),
}


@pytest.mark.parametrize("damage", DAMAGE)
def test_inspect_refuses_out_of_range_indices(tmp_path, small_model, damage):
    path = tmp_path / f"{damage}.tflite"
    path.write_bytes(mutate(small_model.read_bytes(), DAMAGE[damage]))
    assert_refused_in_one_line(_inspect(tmp_path, str(path), "--no-fit"), "corrupt or truncated", "re-export it")


def test_inspect_takes_a_tensor_without_shape_as_a_scalar(tmp_path, small_model):
    def drop_shape(model, graph):
        graph.tensors[_first_op(graph).outputs[0]].shape = None

    path = tmp_path / "no_shape.tflite"
    path.write_bytes(mutate(small_model.read_bytes(), drop_shape))
    done = _inspect(tmp_path, str(path), "--no-fit", "--json")
    assert "Traceback" not in done.stderr
    assert done.returncode in (0, 2), done.stderr


@pytest.mark.parametrize(("schema_type", "name"), [(10, "float64"), (5, "string"), (16, "uint16"), (17, "int4")])
@pytest.mark.parametrize("end", ["inputs", "outputs"])
def test_unsupported_io_type_is_named_not_called_corrupt(tmp_path, small_model, schema_type, name, end):
    def retype(model, graph):
        graph.tensors[getattr(graph, end)[0]].type = schema_type

    path = tmp_path / f"{end}_{name}.tflite"
    path.write_bytes(mutate(small_model.read_bytes(), retype))
    done = _inspect(tmp_path, str(path), "--no-fit")
    assert_refused_in_one_line(done, f"unsupported {name}", "harness models convert --io")
    assert "corrupt" not in done.stderr


def test_model_file_that_is_a_directory(tmp_path):
    (tmp_path / "model.tflite").mkdir()
    assert_refused_in_one_line(_inspect(tmp_path, str(tmp_path / "model.tflite"), "--no-fit"), "is a folder")


def test_card_that_is_a_directory(tmp_path):
    (tmp_path / "card.toml").mkdir()
    assert_refused_in_one_line(_inspect(tmp_path, str(tmp_path / "card.toml"), "--no-fit"), "card", "is a folder")


@pytest.mark.skipif(not os.path.exists("/proc/self/mem"), reason="needs /proc/self/mem (Linux) as an unreadable file")
@pytest.mark.parametrize("suffix", [".tflite", ".toml"])
def test_unreadable_model_or_card_file(tmp_path, suffix):
    # Reading /proc/self/mem from offset 0 fails with EIO, like a file without read permission (as root,
    # chmod 000 does not stop a read), and takes the same OSError path.
    link = tmp_path / f"unreadable{suffix}"
    link.symlink_to("/proc/self/mem")
    assert_refused_in_one_line(
        _inspect(tmp_path, str(link), "--no-fit"), "could not be read (Input/output error)", str(link)
    )


def test_inspect_layers_and_json_give_shapes_as_numbers(tmp_path, small_model):
    done = _inspect(tmp_path, str(small_model), "--no-fit", "--json")
    assert done.returncode == 0, done.stderr
    layers = json.loads(done.stdout)["layers"]
    assert layers[0]["output_shape"] == [1, 50, 50, 3]
    assert all(isinstance(d, int) for layer in layers for d in layer["output_shape"])
    table = _inspect(tmp_path, str(small_model), "--no-fit", "--layers")
    assert table.returncode == 0, table.stderr
    assert "[1, 50, 50, 3]" in table.stdout and "[1, 2]" in table.stdout
