"""`harness eval --protocol eembc` on a real board whose firmware behaves as the MLPerf Tiny reference vww01 DUT
(tests/reference_dut.py on a pseudo-terminal, named with --port): the float32 card a user tried is refused
before any sample, in one line naming the card to use, and nothing harness sent crashed the DUT."""

import json
import subprocess
import sys

import pytest

from tests.conftest import fixture_model
from tests.reference_dut import ReferenceDut


def _eval(tmp_path, dut: ReferenceDut, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "harness", "eval", "--board", "nucleo_h743", "--port", dut.path]
    command += ["--protocol", "eembc", "--limit", "2", "--results", str(tmp_path / "r"), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path)


def test_the_float32_vww_card_on_reference_vww01_firmware_is_refused_naming_the_card(tmp_path):
    fixture_model("mlperf_tiny/visual_wake_words.tflite")
    with ReferenceDut() as dut:
        done = _eval(tmp_path, dut, "--model", "mlperf_tiny_vww")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and len(lines) == 1, done.stderr
    assert "96x96x3 uint8 (27648 bytes" in lines[0] and "--model mlperf_tiny_vww01" in lines[0]
    assert not dut.crashed and dut.commands[1:] == ["name", "profile", "timestamp"]
    assert not any(c.startswith("db") for c in dut.commands)  # refused before any sample was sent


def test_energy_mode_reference_firmware_is_named(tmp_path):
    fixture_model("mlperf_tiny/visual_wake_words.tflite")
    with ReferenceDut(energy=True) as dut:
        done = _eval(tmp_path, dut, "--model", "mlperf_tiny_vww", "--baud", "9600")
    assert done.returncode == 2, done.stderr
    assert "energy-mode firmware" in done.stderr and "EE_CFG_ENERGY_MODE 0" in done.stderr
    assert "--meter" in done.stderr and not dut.crashed


CARD = """
name = "ref_vww01_test"
task = "image_classification"
[file]
name = "m.tflite"
[source]
kind = "path"
path = "m.tflite"
[preprocessing]
pipeline = "mlperf-vww"
size = [96, 96]
color = "rgb"
scaling = "unit"
dtype = "int8"
[output]
kind = "softmax"
positive_index = 1
labels = ["notperson", "person"]
[eembc]
model = "vww01"
input = "uint8"
"""


def _int8_vww_shaped_model() -> bytes:
    """A small int8 model of the reference vww01 layout: 96x96x3 int8 in (pixels / 255), 2 int8 softmax out."""
    import numpy as np
    import tensorflow as tf

    tf.keras.utils.set_random_seed(1)
    inputs = tf.keras.Input((96, 96, 3))
    x = tf.keras.layers.AveragePooling2D(8)(inputs)
    x = tf.keras.layers.Flatten()(x)
    outputs = tf.keras.layers.Dense(2, activation="softmax")(x)
    model = tf.keras.Model(inputs, outputs)
    rng = np.random.default_rng(0)

    def representative():
        for _ in range(8):
            yield [rng.integers(0, 256, (1, 96, 96, 3)).astype(np.float32) / 255]

    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = representative
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    converter.inference_input_type = converter.inference_output_type = tf.int8
    return converter.convert()


@pytest.mark.slow
def test_a_vww01_card_sends_the_reference_its_uint8_pixels_and_gets_the_hosts_results(tmp_path):
    """The card's [eembc] table on a real board: `db load 27648`, each int8 value sent plus 128 (the DUT
    subtracts 128), and the DUT's %0.3f results quantized back to the host's outputs bit for bit."""
    from harness.model.tflite_file import read_tflite
    from harness.model.tflm import make_interpreter

    model = tmp_path / "m.tflite"
    model.write_bytes(_int8_vww_shaped_model())
    (tmp_path / "card.toml").write_text(CARD)
    spec = read_tflite(model)
    assert (spec.input.dtype_name, spec.input.zero_point, spec.input.bytes) == ("int8", -128, 27648)
    interpreter = make_interpreter(model.read_bytes(), 64 * 1024)

    def network(values):
        interpreter.set_input(values.reshape(1, 96, 96, 3), 0)
        interpreter.invoke()
        return interpreter.get_output(0).reshape(-1)

    output = (spec.output.scale, spec.output.zero_point)
    with ReferenceDut(network=network, output=output) as dut:
        done = _eval(tmp_path, dut, "--model", str(tmp_path / "card.toml"), "--references", "tflm", "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["samples"] == 2 and summary["bit_exact"]["tflm"] == 2
    assert dut.commands.count("db load 27648") == 2 and not dut.crashed
