"""Builds the device core (firmware/core + the virtual board's HAL) into a shared library, and the
small image core that blends TF-exact bilinear resizes.

The virtual board and the host's frame codec load it with ctypes, so the protocol runs from
the same C sources on the host as on a microcontroller. Board and model data files ship inside
the package as harness/_share for non-editable installs.
"""

import shutil
import sys
from glob import glob
from pathlib import Path

import setuptools
from setuptools import Extension, setup
from setuptools.command.build_py import build_py

# pyproject.toml's `license = "Apache-2.0"` (an SPDX expression) needs setuptools 77; a build without isolation
# uses the environment's own setuptools (a fresh Python 3.11 venv has 65), which would fail far less clearly.
SETUPTOOLS_NEEDED = 77
if int(setuptools.__version__.split(".")[0]) < SETUPTOOLS_NEEDED:
    sys.exit(
        f"building harness needs setuptools>={SETUPTOOLS_NEEDED} (this environment has {setuptools.__version__}): "
        "build with isolation (plain `pip install .` or `pip wheel .`), or `pip install -U setuptools` first"
    )

DATA_DIRS = ("boards", "models", "firmware")


class BuildPyWithData(build_py):
    def run(self):
        super().run()
        for name in DATA_DIRS:
            target = Path(self.build_lib) / "harness" / "_share" / name
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(name, target)


device_core = Extension(
    "harness._devicecore",
    sources=[path for part in ("core", "eembc", "sim") for path in sorted(glob(f"firmware/{part}/*.c"))],
    include_dirs=["firmware/core", "firmware/eembc"],
    # No fused multiply-adds: the EEMBC DUT's anomaly score must round as the host's float32 arithmetic does.
    extra_compile_args=["-std=c99", "-O2", "-Wall", "-Wextra", "-ffp-contract=off"],
)

# TF-exact bilinear blending for preprocessing, loaded with ctypes (see harness/eval/bilinear.c).
image_core = Extension(
    "harness._imagecore",
    sources=["harness/eval/bilinear.c"],
    extra_compile_args=["-std=c99", "-O2", "-Wall", "-Wextra", "-ffp-contract=off"],
)

setup(ext_modules=[device_core, image_core], cmdclass={"build_py": BuildPyWithData})
