"""Row-coded inputs against raw ones on the virtual board (docs/link.md, "Compressed inputs"): samples/s and wire
bytes a sample at 115200, 921600 and 2000000 baud, with the inference emulated at the Cortex-M7 figure.

The board is benchmarks/link.py's: the C device core on a pseudo-terminal paced to the baud rate, its runner an
int8[1,96,96,3] model computing the per-channel mean, every output checked. The inputs are demo images as the
MLPerf Tiny VWW int8 card prepares them (96x96 RGB, pixel - 128). The inference time is the default model's
24.5 M instructions on qemu_m7 at a 480 MHz Cortex-M7 (one instruction a cycle: `estimated`), 51 ms. Raw sends
HARNESS_INPUT_FORMS=raw; coded lets the host choose (harness/link/input_forms.py). Samples/s is `sim`.

--hal adds the hosted HALs (benchmarks/link.py's: the real HAL sources compiled for this machine, the TFLM host
interpreter running wv_quality_k_2_c_3, uint8[1,50,50,3], the demo images at that size), the same inference
time emulated; raw and coded outputs must be equal. Labelled `sim (hosted HAL)`.

    python benchmarks/codec_link.py [--samples 8] [--bauds 115200,921600,2000000] [--hal]
"""

import argparse
import os
import time

import numpy as np
from link import HAL_MODEL, HALS, MeanRunner, _hal_model, hal_client, sim_client

from harness.eval.dataset import load_dataset
from harness.eval.preprocess import load_rgb, real_input
from harness.link.input_forms import FORMS_SETTING
from harness.model.cards import all_cards

M7_INVOKE_MS = 24.5e6 / 480e6 * 1000


def demo_inputs(count: int, card: str = "mlperf_tiny_vww01", offset: int = 128) -> list[bytes]:
    """The demo images at the card's size, pixel values less `offset` (128: int8, 0: uint8)."""
    pre = all_cards()[card].preprocessing
    raw_pixels = type(pre)(**{**pre.__dict__, "scaling": "raw"})
    found = []
    for sample in load_dataset("demo").samples[:count]:
        pixels = np.clip(np.round(real_input(load_rgb(sample.image_path), raw_pixels)), 0, 255).astype(np.int16)
        found.append((pixels - offset).astype(np.int8 if offset else np.uint8).tobytes())
    return found


def run(inputs: list[bytes], baud: int, forms: str) -> tuple[float, float]:
    """(samples/s, input wire bytes a sample) of the inputs streamed through the board."""
    os.environ[FORMS_SETTING] = forms
    with sim_client(baud, M7_INVOKE_MS) as client:
        client.run(inputs[0])  # the first sample's set-up stays out of the rate
        started = time.perf_counter()
        outputs = [result.output for result in client.run_stream(inputs[1:])]
        seconds = time.perf_counter() - started
        wire = client.stats.input_wire_bytes / len(inputs)
    assert outputs == [MeanRunner.compute(d) for d in inputs[1:]], "outputs differ"
    return (len(inputs) - 1) / seconds, wire


def hal_run(name: str, model, inputs: list[bytes], baud: int, forms: str) -> tuple[float, float, list[bytes]]:
    """(samples/s, input wire bytes a sample, outputs) through a hosted HAL."""
    os.environ[FORMS_SETTING] = forms
    with hal_client(name, baud, model, M7_INVOKE_MS) as client:
        client.run(inputs[0])
        started = time.perf_counter()
        outputs = [result.output for result in client.run_stream(inputs[1:])]
        seconds = time.perf_counter() - started
        wire = client.stats.input_wire_bytes / len(inputs)
    return (len(inputs) - 1) / seconds, wire, outputs


def hal_rows(samples: int, bauds: list[int]) -> None:
    model = _hal_model()
    if model is None:
        print(f"hosted HALs: the shared fixtures hold no {HAL_MODEL}, skipped")
        return
    inputs = demo_inputs(samples + 1, "wv_quality_k_2_c_3", offset=0)
    for name in HALS:
        for baud in bauds:
            raw_rate, raw_wire, raw_out = hal_run(name, model, inputs, baud, "raw")
            rate, wire, out = hal_run(name, model, inputs, baud, "smallest")
            assert out == raw_out, f"{name}: coded outputs differ from raw"
            print(
                f"{name:<15} {baud:>8} baud: raw {raw_rate:.2f} samples/s ({raw_wire:,.0f} B a sample), coded "
                f"{rate:.2f} samples/s ({wire:,.0f} B a sample): coded / raw {rate / raw_rate:.2f} (sim (hosted HAL))"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--bauds", default="115200,921600,2000000")
    parser.add_argument("--hal", action="store_true", help="the hosted HALs too")
    args = parser.parse_args()
    inputs = demo_inputs(args.samples + 1)
    print(f"inference emulated at {M7_INVOKE_MS:.0f} ms a sample (estimated: 24.5 M instructions at 480 MHz)")
    for baud in map(int, args.bauds.split(",")):
        raw_rate, raw_wire = run(inputs, baud, "raw")
        rate, wire = run(inputs, baud, "smallest")
        print(
            f"{baud:>8} baud: raw {raw_rate:.2f} samples/s ({raw_wire:,.0f} B a sample), coded {rate:.2f} samples/s "
            f"({wire:,.0f} B a sample): coded / raw {rate / raw_rate:.2f} (sim)"
        )
    if args.hal:
        hal_rows(args.samples, [int(b) for b in args.bauds.split(",") if int(b) > 115200])


if __name__ == "__main__":
    main()
