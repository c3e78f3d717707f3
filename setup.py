"""Builds the device core (firmware/core + the virtual board's HAL) into a shared library, and the
small image core that blends TF-exact bilinear resizes.

The virtual board and the host's frame codec load it with ctypes, so the protocol runs from
the same C sources on the host as on a microcontroller. Board and model data files ship inside
the package as harness/_share for non-editable installs.
"""

import shutil
from glob import glob
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

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
