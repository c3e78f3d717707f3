"""What FPU a linked Arm firmware image needs, read from its ELF, against the FPU its board has.

Two readings: the ELF's Arm build attributes (Tag_FP_arch: the FPU architecture the objects were built for, merged
by the linker; Tag_ABI_HardFP_use: single precision only, or both) and its code, disassembled with
`arm-none-eabi-objdump -d`, for double-precision VFP instructions (an `.f64` in the mnemonic: vadd.f64, vsqrt.f64,
vcvt.f32.f64, ...). A single-precision FPU (fpv4-sp-d16, fpv5-sp-d16) runs none of them: they fault (UsageFault,
NOCP) when reached. They get in when the compiler and the linker are given different FPUs: stm32duino's
-mfpu=fpv4-sp-d16 unflagged leaves the link GCC's default for the core, on a Cortex-M7 the double-precision
thumb/v7e-m+dp libraries, whose frexp and sqrt are double-precision code.
"""

import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from elftools.elf.elffile import ELFFile

from harness.boards import FPUS, Board
from harness.errors import BuildError

OBJDUMP = "arm-none-eabi-objdump"
OBJDUMP_TIMEOUT_SECONDS = 300
# Tag_FP_arch (Arm's "Addenda to, and Errata in, the ABI for the Arm Architecture", build attributes).
FP_ARCH_NAMES = {
    0: "none",
    1: "VFPv1",
    2: "VFPv2",
    3: "VFPv3",
    4: "VFPv3-D16",
    5: "VFPv4",
    6: "VFPv4-D16",
    7: "FP for Armv8",
    8: "FPv5/FP-D16 for Armv8",
}
# The Tag_FP_arch values an FPU of each version runs: the 16-register ones up to it (no 32-register VFP on an M).
RUNS_FP_ARCH = {4: {0, 2, 4, 6}, 5: {0, 2, 4, 6, 8}}
HARDFP_USE_NAMES = {0: "as Tag_FP_arch", 1: "SP only", 2: "DP only", 3: "SP and DP"}
SP_ONLY = 1
_INSTRUCTION = re.compile(r"^\s*([0-9a-f]+):\s+(v[a-z0-9]*(?:\.[a-z0-9]+)+)\b")
_FUNCTION = re.compile(r"^[0-9a-f]+ <([^>]+)>:$")


@dataclass(frozen=True)
class FpuUse:
    """What the image needs: its attributes and the double-precision instructions found in its code."""

    fp_arch: int
    hardfp_use: int
    double_instructions: list[tuple[str, str, str]] = field(default_factory=list)  # (address, mnemonic, function)
    scanned: bool = True  # False: no objdump here, the attributes alone were read

    @property
    def fp_arch_name(self) -> str:
        return FP_ARCH_NAMES.get(self.fp_arch, f"Tag_FP_arch {self.fp_arch}")

    def as_record(self) -> dict:
        return {
            "fp_arch": self.fp_arch_name,
            "hardfp_use": HARDFP_USE_NAMES.get(self.hardfp_use, str(self.hardfp_use)),
            "double_instructions": len(self.double_instructions) if self.scanned else None,
        }


def fp_attributes(elf: Path) -> tuple[int, int]:
    """(Tag_FP_arch, Tag_ABI_HardFP_use) of the image; 0 where the image does not say."""
    found = {}
    with open(elf, "rb") as f:
        section = ELFFile(f).get_section_by_name(".ARM.attributes")
        if section is not None:
            for subsection in section.iter_subsections():
                for subsubsection in subsection.iter_subsubsections():
                    for attribute in subsubsection.iter_attributes():
                        found[attribute.tag] = attribute.value
    return int(found.get("TAG_FP_ARCH", 0)), int(found.get("TAG_ABI_HARDFP_USE", 0))


def find_objdump() -> str | None:
    """arm-none-eabi-objdump: on PATH, else the one in PlatformIO's toolchain package (PLATFORMIO_CORE_DIR, else
    ~/.platformio)."""
    on_path = shutil.which(OBJDUMP)
    if on_path:
        return on_path
    core = Path(os.environ.get("PLATFORMIO_CORE_DIR") or Path.home() / ".platformio")
    for candidate in sorted(core.glob(f"packages/toolchain-gccarmnoneeabi*/bin/{OBJDUMP}")):
        if os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def double_instructions(elf: Path, objdump: str) -> list[tuple[str, str, str]]:
    """Every double-precision VFP instruction in the image's code: (address, mnemonic, function)."""
    done = subprocess.run(
        [objdump, "-d", "--no-show-raw-insn", str(elf)],
        capture_output=True,
        text=True,
        timeout=OBJDUMP_TIMEOUT_SECONDS,
    )
    if done.returncode != 0:
        raise BuildError(f"{objdump} could not disassemble {elf}: {done.stderr.strip()[:200]}")
    found, function = [], "?"
    for line in done.stdout.splitlines():
        header = _FUNCTION.match(line)
        if header:
            function = header.group(1)
            continue
        instruction = _INSTRUCTION.match(line)
        if instruction and ".f64" in instruction.group(2):
            found.append((instruction.group(1), instruction.group(2), function))
    return found


def read_fpu_use(elf: Path) -> FpuUse:
    fp_arch, hardfp_use = fp_attributes(elf)
    objdump = find_objdump()
    if objdump is None:
        return FpuUse(fp_arch, hardfp_use, scanned=False)
    return FpuUse(fp_arch, hardfp_use, double_instructions(elf, objdump))


def fpu_problem(use: FpuUse, fpu: str) -> str | None:
    """Why an image that needs `use` cannot run on an FPU `fpu`, in a sentence; None: it can."""
    version, double = FPUS[fpu]
    if use.fp_arch not in RUNS_FP_ARCH[version]:
        return f"is built for {use.fp_arch_name} (Tag_FP_arch), which {fpu} does not run"
    if double:
        return None
    if use.double_instructions:
        address, mnemonic, function = use.double_instructions[0]
        return (
            f"holds {len(use.double_instructions)} double-precision instructions (first: {mnemonic} in {function} "
            f"at 0x{address}), which the single-precision {fpu} cannot run"
        )
    if use.fp_arch and use.hardfp_use != SP_ONLY:
        use_name = HARDFP_USE_NAMES.get(use.hardfp_use, str(use.hardfp_use))
        return f"is built for double precision (Tag_ABI_HardFP_use: {use_name}) and {fpu} has none"
    return None


def check_firmware_fpu(elf: Path, board: Board) -> dict:
    """The FPU the image needs, for the build record; a BuildError in one line if the board's FPU cannot run it.
    A board file that names no fpu is not checked (an empty record)."""
    if board.fpu is None:
        return {}
    use = read_fpu_use(elf)
    problem = fpu_problem(use, board.fpu)
    if problem:
        raise BuildError(
            f"the {board.id} firmware {problem}: the compiler and the linker were given different FPUs; give the "
            f"linker the compiler's -mfpu (platformio.link_flags) or keep the framework's (docs/boards.md, FPU flags)"
        )
    return {"fpu": board.fpu, **use.as_record()}
