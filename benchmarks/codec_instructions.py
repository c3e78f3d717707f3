"""The row codec's decoder on QEMU's Cortex-M4 and M7 (docs/link.md, "Compressed inputs"): instructions per input
element, counted under -icount.

A dedicated bare-metal build: firmware/core/hp_row_codec.c with the firmware's flags (-Os and the board's
cpu_flags), decoding a demo image's stream in LOAD_INPUT-sized pieces into a float32 tensor (the default model's
input, widened), timed with the CMSDK timer the qemu_mps2 HAL uses (virtual time: under -icount shift=7 one
instruction is 128 ns, the timer ticks every 40 ns). The decoded tensor's CRC-32 is checked against the host's.
Every figure is `emulated`.

    python benchmarks/codec_instructions.py [--images 4] [--piece 4096] [--optimize -Os] [--filters 0,1,2,3,5]
"""

import argparse
import subprocess
import tempfile
import tomllib
import zlib
from pathlib import Path

import numpy as np

from harness.eval.dataset import load_dataset
from harness.eval.preprocess import load_rgb, real_input
from harness.link import row_codec
from harness.model.cards import all_cards

ROOT = Path(__file__).resolve().parents[1]
TICK_NS, INSTRUCTION_NS = 40, 2**7

MAIN = r"""
#include <stdint.h>
#include "hp_crc32.h"
#include "hp_row_codec.h"
#include "stream.h"

#define TIMER_LOAD (*(volatile uint32_t *)0x40002000u)
#define TIMER_VALUE (*(volatile uint32_t *)0x40002004u)
#define TIMER_CONTROL (*(volatile uint32_t *)0x40002008u)

static hp_row_codec codec;
static uint8_t tensor[TENSOR_BYTES] __attribute__((aligned(4))); /* as an interpreter arena's tensors */
extern uint32_t _estack;

static void semihost(uint32_t op, const void *arg) {
  register uint32_t r0 __asm__("r0") = op;
  register const void *r1 __asm__("r1") = arg;
  __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
}

static char *put_number(char *p, uint32_t v) {
  char digits[12];
  int n = 0;
  do digits[n++] = (char)('0' + v % 10u); while ((v /= 10u) != 0);
  while (n) *p++ = digits[--n];
  *p++ = ' ';
  *p = 0;
  return p;
}

void Reset_Handler(void) {
#if defined(__ARM_FP)
  *(volatile uint32_t *)0xE000ED88u |= 0xFu << 20;
  __asm__ volatile("dsb\n isb");
#endif
  TIMER_LOAD = 0xFFFFFFFFu;
  TIMER_CONTROL = 0x80u | 0x40u | 0x02u;
  uint32_t start = TIMER_VALUE;
  int32_t done = 0;
  for (uint32_t at = 0; at < sizeof stream; at += PIECE) {
    uint32_t len = sizeof stream - at < PIECE ? sizeof stream - at : PIECE;
    done = hp_row_codec_decode(&codec, tensor, TENSOR_BYTES, 1, at, stream + at, len);
  }
  uint32_t ticks = start - TIMER_VALUE;
  static char line[64];
  put_number(put_number(put_number(line, ticks), (uint32_t)done), hp_crc32_update(0, tensor, TENSOR_BYTES));
  semihost(0x04, line);
  semihost(0x18, (const void *)0x20026u); /* ADP_Stopped_ApplicationExit */
  for (;;) {
  }
}

__attribute__((section(".isr_vector"), used)) static void (*const vectors[2])(void) = {
    (void (*)(void))(&_estack), Reset_Handler};
"""

LINK = """
MEMORY { FLASH (rx) : ORIGIN = 0x00000000, LENGTH = 4M  RAM (rwx) : ORIGIN = 0x20000000, LENGTH = 4M }
SECTIONS {
  .text : { KEEP(*(.isr_vector)) *(.text*) *(.rodata*) } > FLASH
  .bss (NOLOAD) : { *(.bss*) *(COMMON) } > RAM
  _estack = ORIGIN(RAM) + LENGTH(RAM);
}
"""


def demo_streams(count: int, filters: tuple[int, ...] = row_codec.DEFAULT_FILTERS) -> list[tuple[bytes, np.ndarray]]:
    """The default model's input (96x96 RGB, whole numbers 0..255 widened to float32) of the first demo images,
    each row coded under the smallest of `filters`."""
    pre = all_cards()["mlperf_tiny_vww"].preprocessing
    found = []
    for sample in load_dataset("demo").samples[:count]:
        pixels = np.clip(np.round(real_input(load_rgb(sample.image_path), pre)), 0, 255).astype(np.uint8).ravel()
        found.append((row_codec.encode(pixels, 96 * 3, 3, row_codec.OUT_WIDEN_U8, filters), pixels))
    return found


def measure(
    board: str, stream: bytes, pixels: np.ndarray, piece: int, work: Path, optimize: str = "-Os"
) -> tuple[int, int, bool]:
    """(instructions, tensor bytes decoded, CRC matches) of one decode on `board`."""
    config = tomllib.loads((ROOT / "boards" / f"{board}.toml").read_text())
    tensor = pixels.astype("<f4").tobytes()
    (work / "stream.h").write_text(
        f"#define TENSOR_BYTES {len(tensor)}u\n#define PIECE {piece}u\n"
        f"static const uint8_t stream[{len(stream)}] = {{{','.join(map(str, stream))}}};\n"
    )
    (work / "main.c").write_text(MAIN)
    (work / "link.ld").write_text(LINK)
    elf = work / f"{board}.elf"
    core = ROOT / "firmware" / "core"
    compile_ = [
        "arm-none-eabi-gcc",
        *config["firmware"]["cpu_flags"].split(),
        optimize,
        "-std=c99",
        "--specs=nano.specs",
    ]
    compile_ += ["-nostartfiles", f"-I{core}", f"-I{work}", "-T", str(work / "link.ld"), "-o", str(elf)]
    compile_ += [str(work / "main.c"), str(core / "hp_row_codec.c"), str(core / "hp_crc32.c"), "-lc", "-lgcc"]
    subprocess.run(compile_, check=True)
    qemu = config["qemu"]
    printed = work / "semihosting.txt"
    printed.unlink(missing_ok=True)
    run = ["qemu-system-arm", "-M", qemu["machine"], "-display", "none", "-monitor", "none", "-serial", "none"]
    run += ["-chardev", f"file,id=out,path={printed}", "-icount", f"shift={qemu['icount_shift']}"]
    run += ["-semihosting-config", "enable=on,target=native,chardev=out", "-kernel", str(elf)]
    subprocess.run(run, capture_output=True, timeout=120, check=True)
    ticks, decoded, crc = (int(word) for word in printed.read_text().split()[:3])
    return round(ticks * TICK_NS / INSTRUCTION_NS), decoded, crc == zlib.crc32(tensor)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=4)
    parser.add_argument("--piece", type=int, default=4096, help="stream bytes a LOAD_INPUT frame (default 4096)")
    parser.add_argument("--optimize", default="-Os", help="the decoder's optimisation (default the firmware's, -Os)")
    parser.add_argument(
        "--filters",
        default=",".join(map(str, row_codec.DEFAULT_FILTERS)),
        help=f"the filters the encoder may pick, numbers into {row_codec.FILTERS} (default the encoder's)",
    )
    args = parser.parse_args()
    try:
        filters = tuple(int(f) for f in args.filters.split(","))
    except ValueError:
        filters = ()
    if not filters or not all(0 <= f < len(row_codec.FILTERS) for f in filters):
        parser.error(f"--filters {args.filters!r}: give numbers 0-{len(row_codec.FILTERS) - 1}, comma-separated")
    streams = demo_streams(args.images, filters)
    with tempfile.TemporaryDirectory() as work:
        for board in ("qemu_m4", "qemu_m7"):
            for stream, pixels in streams:
                instructions, decoded, exact = measure(board, stream, pixels, args.piece, Path(work), args.optimize)
                print(
                    f"{board}: {instructions / len(pixels):.1f} instructions an input element "
                    f"({instructions:,} for {len(pixels):,}; {len(stream) / len(pixels):.3f} of raw on the wire; "
                    f"{decoded:,} tensor bytes, {'CRC-32 as the host' if exact else 'CRC-32 DIFFERS'}) (emulated)"
                )


if __name__ == "__main__":
    main()
