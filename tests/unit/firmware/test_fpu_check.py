"""The ELF's FPU against the board's: a probe calling frexp and sqrt, linked with Debian's arm-none-eabi GCC as a
board file would have PlatformIO link it, read back by harness/firmware/fpu_check.py."""

import shutil
import subprocess
from pathlib import Path

import pytest

from harness.boards import load_board_file
from harness.errors import BuildError
from harness.firmware.fpu_check import (
    FP_ARCH_NAMES,
    SP_ONLY,
    FpuUse,
    check_firmware_fpu,
    double_instructions,
    find_objdump,
    fp_attributes,
    fpu_problem,
    read_fpu_use,
)
from harness.paths import boards_dir

PROBE = r"""
#include <math.h>
volatile double value = 3.7;
volatile int exponent;
int main(void) {
  double mantissa = frexp(value, (int *)&exponent);
  return (int)(sqrt(mantissa) * 100.0);
}
"""
GCC = "arm-none-eabi-gcc"
pytestmark = pytest.mark.skipif(
    shutil.which(GCC) is None or find_objdump() is None,
    reason="needs Debian's gcc-arm-none-eabi and libnewlib-arm-none-eabi (scripts/install --test installs them)",
)


def _probe(tmp_path: Path, name: str, cpu: str, compile_fpu: str, link_fpu: str | None) -> Path:
    """The probe compiled with -mfpu=compile_fpu and linked with link_fpu (None: no -mfpu, GCC's default for the
    core, as when build_unflags takes stm32duino's and nothing gives the linker another)."""
    source = tmp_path / "probe.c"
    source.write_text(PROBE)
    machine = [f"-mcpu={cpu}", "-mthumb", "-mfloat-abi=hard"]
    obj = tmp_path / f"{name}.o"
    subprocess.run([GCC, *machine, f"-mfpu={compile_fpu}", "-O2", "-c", str(source), "-o", str(obj)], check=True)
    elf = tmp_path / f"{name}.elf"
    link = [GCC, *machine, *([f"-mfpu={link_fpu}"] if link_fpu else []), "--specs=nano.specs", "--specs=nosys.specs"]
    subprocess.run([*link, str(obj), "-lm", "-o", str(elf)], check=True, capture_output=True)
    return elf


def _board(board_id: str):
    return load_board_file(boards_dir() / f"{board_id}.toml")


def test_the_f746_firmware_linked_without_its_fpu_flag_is_refused(tmp_path):
    """The H743's swap on the F746: compiled for the single-precision FPU, linked with GCC's Cortex-M7 default
    (thumb/v7e-m+dp/hard): libm's frexp and sqrt bring double-precision instructions."""
    elf = _probe(tmp_path, "wrong", "cortex-m7", "fpv4-sp-d16", None)
    found = double_instructions(elf, find_objdump())
    assert found and {function for _, _, function in found} <= {"frexp", "sqrt", "__ieee754_sqrt"}, found
    assert all(".f64" in mnemonic for _, mnemonic, _ in found)
    with pytest.raises(BuildError) as refused:
        check_firmware_fpu(elf, _board("disco_f746ng"))
    message = str(refused.value)
    assert f"holds {len(found)} double-precision instructions (first: {found[0][1]} in {found[0][2]}" in message
    assert "which the single-precision fpv5-sp-d16 cannot run" in message and "\n" not in message
    # The same image is fine where the FPU has double precision (the H743, the H7A3).
    assert check_firmware_fpu(elf, _board("nucleo_h7a3zi_q"))["double_instructions"] == len(found)


def test_the_f746_firmware_linked_with_the_compilers_fpu_holds_no_double_precision(tmp_path):
    elf = _probe(tmp_path, "right", "cortex-m7", "fpv4-sp-d16", "fpv4-sp-d16")
    assert double_instructions(elf, find_objdump()) == []
    fp_arch, hardfp_use = fp_attributes(elf)
    assert FP_ARCH_NAMES[fp_arch] == "VFPv4-D16" and hardfp_use == SP_ONLY
    record = check_firmware_fpu(elf, _board("disco_f746ng"))
    assert record == {"fpu": "fpv5-sp-d16", "fp_arch": "VFPv4-D16", "hardfp_use": "SP only", "double_instructions": 0}


def test_an_fpv5_image_is_refused_on_an_fpv4_board(tmp_path):
    """The L4R5's FPv4 does not run FPv5's additions (VRINT, VSEL, VMAXNM, ...): its attributes say FPv5."""
    elf = _probe(tmp_path, "v5", "cortex-m7", "fpv5-sp-d16", "fpv5-sp-d16")
    use = read_fpu_use(elf)
    assert FP_ARCH_NAMES[use.fp_arch].startswith("FPv5")
    expected = "is built for FPv5/FP-D16 for Armv8 (Tag_FP_arch), which fpv4-sp-d16 does not run"
    assert fpu_problem(use, "fpv4-sp-d16") == expected
    assert fpu_problem(use, "fpv5-sp-d16") is None


def test_the_cortex_m33_default_link_is_single_precision(tmp_path):
    """On the Cortex-M33, GCC's default (v8-m.main+fp) has no double precision: the U575 may leave its link alone."""
    elf = _probe(tmp_path, "m33", "cortex-m33", "fpv5-sp-d16", None)
    assert double_instructions(elf, find_objdump()) == []
    assert check_firmware_fpu(elf, _board("nucleo_u575zi_q"))["double_instructions"] == 0


def test_a_board_without_an_fpu_is_not_checked(tmp_path):
    elf = _probe(tmp_path, "any", "cortex-m7", "fpv4-sp-d16", None)
    assert check_firmware_fpu(elf, _board("nano33ble")) == {}


def test_without_objdump_the_attributes_alone_refuse_double_precision(tmp_path):
    """Where no arm-none-eabi-objdump is found, the attributes still say it: the double-precision libraries leave
    Tag_ABI_HardFP_use unset (single and double), which a single-precision FPU refuses."""
    wrong = _probe(tmp_path, "wrong", "cortex-m7", "fpv4-sp-d16", None)
    use = FpuUse(*fp_attributes(wrong), scanned=False)
    assert use.hardfp_use != SP_ONLY
    assert fpu_problem(use, "fpv5-sp-d16") == (
        "is built for double precision (Tag_ABI_HardFP_use: as Tag_FP_arch) and fpv5-sp-d16 has none"
    )
    right = _probe(tmp_path, "right", "cortex-m7", "fpv4-sp-d16", "fpv4-sp-d16")
    assert fpu_problem(FpuUse(*fp_attributes(right), scanned=False), "fpv5-sp-d16") is None
    assert FpuUse(*fp_attributes(right), scanned=False).as_record()["double_instructions"] is None
