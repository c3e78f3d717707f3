"""What the device link costs on the virtual board, measured side by side with direct host inference.

For each sample, in turn: the TFLM host interpreter called directly, and the same inference on the
virtual board over its pseudo-terminal (LOAD_INPUT chunks + INVOKE + answer). Prints medians, the
per-sample ratio and the input throughput of the link. All figures are `sim`/`host` timings of this
machine, not of a microcontroller.

    python benchmarks/sim_link_overhead.py [--model mlperf_tiny_vww] [--samples 60]
"""

import argparse
import statistics
import time

from harness.boards import get_board
from harness.device.launch import connect
from harness.eval.dataset import load_dataset
from harness.eval.preprocess import image_tensor
from harness.model.card import load_card
from harness.model.fetch import obtain_model
from harness.model.references import TflmReference
from harness.model.tflite_file import read_tflite


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="mlperf_tiny_vww")
    parser.add_argument("--samples", type=int, default=60)
    args = parser.parse_args()

    card = load_card(args.model)
    model = read_tflite(obtain_model(card))
    samples = load_dataset("demo").samples[: args.samples]
    tensors = [image_tensor(s.image_path, card.preprocessing, model.input) for s in samples]
    host = TflmReference(model)
    direct, board_round_trip, on_device_invoke = [], [], []
    with connect(get_board("sim"), model) as client:
        for tensor in tensors:
            start = time.perf_counter()
            host.run(tensor)
            direct.append(time.perf_counter() - start)
            start = time.perf_counter()
            result = client.run(tensor.tobytes())
            board_round_trip.append(time.perf_counter() - start)
            on_device_invoke.append(result.timing.seconds)
        stats = client.stats
    ratios = [b / d for b, d in zip(board_round_trip, direct, strict=True)]
    link_seconds = [b - i for b, i in zip(board_round_trip, on_device_invoke, strict=True)]
    input_bytes = model.input.bytes
    print(f"model {card.name}: input {model.input.describe()} ({input_bytes} bytes), {len(tensors)} samples")
    print(f"host TFLM invoke, direct        median {statistics.median(direct) * 1e3:8.3f} ms  [host]")
    print(f"virtual board invoke (timed)    median {statistics.median(on_device_invoke) * 1e3:8.3f} ms  [sim]")
    print(f"virtual board full round trip   median {statistics.median(board_round_trip) * 1e3:8.3f} ms  [sim]")
    print(f"round trip / direct invoke      median {statistics.median(ratios):8.2f}x (per-sample pairs)")
    print(
        f"link time per sample            median {statistics.median(link_seconds) * 1e3:8.3f} ms, "
        f"input throughput {input_bytes / statistics.median(link_seconds) / 1e6:.1f} MB/s"
    )
    print(f"frames sent {stats.frames_sent}, resends {stats.resends}, corrupt {stats.corrupt_frames}")


if __name__ == "__main__":
    main()
