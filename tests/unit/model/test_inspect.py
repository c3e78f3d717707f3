"""`harness inspect` over every model card: fast, never fatal, and an arena estimate that is tight."""

import json
import os
import subprocess
import sys

import pytest

from harness.model.cards import all_cards
from tests.conftest import FIXTURE_MODELS
from tests.forked_cli import run_harness_command

CHECK = """
import json, sys
from harness.model.arena_probe import _works
for path, arena in json.loads(sys.argv[1]):
    data = open(path, "rb").read()
    print(path, _works(data, arena), _works(data, int(arena * 0.9)))
"""


def _inspect(target):
    return run_harness_command(["models", "inspect", target, "--json"], env=os.environ.copy(), timeout=300)


@pytest.mark.slow
def test_inspect_every_card_and_the_tflm_example():
    if not FIXTURE_MODELS.is_dir():
        pytest.skip("needs ../shared/fixtures/models (the shared fixtures are absent in a fresh clone)")
    # A card whose file is not among the fixtures (mlperf_tiny_vww01: fetched from mlcommons/tiny) is left out.
    cards = [name for name, card in all_cards().items() if (FIXTURE_MODELS / (card.mirror_path or "-")).is_file()]
    targets = [*cards, str(FIXTURE_MODELS / "tflm" / "person_detect.tflite")]
    results = {}
    for target in targets:
        done = _inspect(target)
        assert done.returncode == 0, f"{target}: {done.stderr}"
        results[target] = json.loads(done.stdout)
    vww = results["mlperf_tiny_vww"]
    assert vww["macs"] == 7489664 and vww["operators"]["CONV_2D"] == 14 and vww["parameters"] > 200000
    assert {fit["board"] for fit in vww["fits"]} >= {"nucleo_h743", "nano33ble", "esp32dev"}
    pairs = [(result["file"], result["arena_estimate"]) for result in results.values()]
    checked = subprocess.run(
        [sys.executable, "-c", CHECK, json.dumps(pairs)], capture_output=True, text=True, timeout=300
    )
    lines = checked.stdout.split("\n")[:-1]
    assert len(lines) == len(targets)
    assert all(line.endswith("True False") for line in lines), checked.stdout


def test_inspect_refuses_files_that_are_not_models(tmp_path):
    bogus = tmp_path / "weights.tflite"
    bogus.write_bytes(b"\x00" * 64)
    done = _inspect(str(bogus))
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "not a TFLite model" in done.stderr
