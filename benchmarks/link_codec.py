"""benchmarks/link.py's (g) rows: row-coded inputs against raw ones (docs/link.md, "Compressed inputs"), samples/s
and wire bytes a sample at 115200, 921600 and 2000000 baud, with the inference emulated at the Cortex-M7 figure,
and samples/s against the line-rate bound of 27,648-byte inputs (baud / 10 / 27,648).

The inputs are demo images as the MLPerf Tiny vww01 card prepares them (96x96 RGB, int8: pixel - 128). The
inference time is the default model's 24.5 M instructions on qemu_m7 at a 480 MHz Cortex-M7 (one instruction a
cycle: `estimated`), 51 ms. Raw sends HARNESS_INPUT_FORMS=raw; coded lets the host choose
(harness/link/input_forms.py). On the virtual board the runner computes the per-channel mean (every output
checked); on the hosted HALs the TFLM host interpreter runs the vww01 reference model (vww_96_int8, int8[1,96,96,3],
from the shared fixtures) and the coded outputs must equal the raw ones. Samples/s is `sim` (`sim (hosted HAL)`).
"""

import os
import time

import numpy as np
from link_boards import HALS, MeanRunner, hal_client, shared_model, sim_client

from harness.eval.dataset import load_dataset
from harness.eval.preprocess import load_rgb, real_input
from harness.link.input_forms import FORMS_SETTING
from harness.model.cards import all_cards

M7_INVOKE_MS = 24.5e6 / 480e6 * 1000
CODEC_BAUDS = (115200, 921600, 2000000)
VWW01_MODEL = "mlperf_tiny_reference/vww_96_int8.tflite"
VWW_INPUT_BYTES = 96 * 96 * 3


def demo_inputs(count: int) -> list[bytes]:
    """The demo images as vww01's int8 inputs: 96x96 RGB pixels less 128."""
    pre = all_cards()["mlperf_tiny_vww01"].preprocessing
    raw_pixels = type(pre)(**{**pre.__dict__, "scaling": "raw"})
    found = []
    for sample in load_dataset("demo").samples[:count]:
        pixels = np.clip(np.round(real_input(load_rgb(sample.image_path), raw_pixels)), 0, 255).astype(np.int16)
        found.append((pixels - 128).astype(np.int8).tobytes())
    return found


def _stream(client, inputs: list[bytes]) -> tuple[float, float, list[bytes]]:
    """(samples/s, input wire bytes a sample, outputs), the first sample's set-up left out of the rate."""
    client.run(inputs[0])
    started = time.perf_counter()
    outputs = [result.output for result in client.run_stream(inputs[1:])]
    seconds = time.perf_counter() - started
    return (len(inputs) - 1) / seconds, client.stats.input_wire_bytes / len(inputs), outputs


def _measured(open_client, args: tuple, inputs: list[bytes], forms: str) -> tuple[float, float, list[bytes]]:
    os.environ[FORMS_SETTING] = forms
    try:
        with open_client(*args) as client:
            return _stream(client, inputs)
    finally:
        del os.environ[FORMS_SETTING]


def _row(label: str, baud: int, raw: tuple, coded: tuple, source: str) -> str:
    (raw_rate, raw_wire, _), (rate, wire, _) = raw, coded
    bound = baud / 10 / VWW_INPUT_BYTES
    return (
        f"    {label:<15} {baud:>8} baud: raw {raw_rate:5.2f} samples/s ({raw_wire:,.0f} B a sample), coded "
        f"{rate:5.2f} samples/s ({wire:,.0f} B a sample); coded ÷ raw {rate / raw_rate:.2f}, coded ÷ line-rate "
        f"bound {rate / bound:.2f} [{source}]"
    )


def codec_rows(samples: int, bauds=CODEC_BAUDS, hals: bool = True) -> None:
    inputs = demo_inputs(samples + 1)
    print(
        f"(g) row-coded ÷ raw inputs, {samples} demo images a run (int8[1,96,96,3]), inference emulated at "
        f"{M7_INVOKE_MS:.0f} ms [estimated: 24.5 M instructions at 480 MHz]; line-rate bound = baud / 10 / 27,648"
    )
    expected = [MeanRunner.compute(d) for d in inputs[1:]]
    for baud in bauds:
        runs = [_measured(sim_client, (baud, M7_INVOKE_MS), inputs, forms) for forms in ("raw", "smallest")]
        assert all(outputs == expected for _, _, outputs in runs), "outputs differ"
        print(_row("virtual board", baud, *runs, "sim"))
    model = shared_model(VWW01_MODEL) if hals else None
    if hals and model is None:
        print(f"    hosted HALs skipped: needs ../shared/fixtures/models/{VWW01_MODEL}")
    for name in HALS if model is not None else ():
        for baud in [b for b in bauds if b > 115200]:
            runs = [
                _measured(hal_client, (name, baud, model, M7_INVOKE_MS), inputs, forms) for forms in ("raw", "smallest")
            ]
            assert runs[0][2] == runs[1][2], f"{name}: coded outputs differ from raw"
            usb = " (USB CDC: no baud)" if name == "hal_mbed" else ""
            print(_row(name, baud, *runs, "sim (hosted HAL)") + usb)
