"""firmware/core builds warning-free for Cortex-M4, Cortex-M7 and the host, warnings as errors."""

import shutil
import subprocess

import pytest

from tests.conftest import REPO

STRICT = ["-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-Wpedantic", "-Wshadow", "-Wconversion"]
TARGETS = {
    "host": ["gcc"],
    "cortex-m4": ["arm-none-eabi-gcc", "-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"],
    "cortex-m7": ["arm-none-eabi-gcc", "-mcpu=cortex-m7", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv5-d16"],
}


@pytest.mark.parametrize("target", list(TARGETS))
def test_core_compiles_with_warnings_as_errors(target, tmp_path):
    compiler = TARGETS[target]
    if shutil.which(compiler[0]) is None:
        pytest.skip(f"needs {compiler[0]} (scripts/install --test installs it as root)")
    for source in sorted((REPO / "firmware" / "core").glob("*.c")):
        done = subprocess.run(
            [*compiler, *STRICT, f"-I{REPO / 'firmware' / 'core'}", "-c", str(source), "-o", str(tmp_path / "x.o")],
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, f"{source.name} for {target}:\n{done.stderr}"
