"""A user-supplied TFLM source tree (the output of tflite-micro's create_tflm_tree.py): its compiled
library per CPU, and the op resolver a model needs. Harness never ships or fetches TFLM itself."""

import hashlib
import subprocess
from functools import cached_property
from pathlib import Path

from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as schema

from harness.errors import BuildError, UserError
from harness.paths import cache_dir

# MicroMutableOpResolver method names that are not the CamelCase of the builtin operator's name.
_METHOD_EXCEPTIONS = {
    "CONV_2D": "AddConv2D",
    "DEPTHWISE_CONV_2D": "AddDepthwiseConv2D",
    "AVERAGE_POOL_2D": "AddAveragePool2D",
    "MAX_POOL_2D": "AddMaxPool2D",
    "L2_POOL_2D": "AddL2Pool2D",
    "BATCH_MATMUL": "AddBatchMatMul",
    "CUMSUM": "AddCumSum",
    "PADV2": "AddPadV2",
    "UNIDIRECTIONAL_SEQUENCE_LSTM": "AddUnidirectionalSequenceLSTM",
}
_CUSTOM_METHODS = {"TFLite_Detection_PostProcess": "AddDetectionPostprocess"}
_BUILTIN_NAMES = {value: name for name, value in vars(schema.BuiltinOperator).items() if not name.startswith("_")}
LIBRARY_TIMEOUT_SECONDS = 3600


def model_operators(model_data: bytes) -> list[str]:
    """Builtin operator names (or custom codes) in the order the model lists them."""
    model = schema.ModelT.InitFromPackedBuf(bytearray(model_data), 0)
    names = []
    for code in model.operatorCodes:
        builtin = max(code.builtinCode, code.deprecatedBuiltinCode)
        name = _BUILTIN_NAMES.get(builtin, f"BUILTIN_{builtin}")
        names.append(code.customCode.decode() if name == "CUSTOM" and code.customCode else name)
    return names


def resolver_method(operator: str) -> str:
    if operator in _CUSTOM_METHODS:
        return _CUSTOM_METHODS[operator]
    if operator.startswith("Signal"):  # TFLM's signal library (audio frontends): SignalWindow -> AddWindow
        return "Add" + operator.removeprefix("Signal")
    return _METHOD_EXCEPTIONS.get(operator) or "Add" + "".join(part.capitalize() for part in operator.split("_"))


class TflmTree:
    def __init__(self, root: Path):
        self.root = Path(root).resolve()
        if not (self.root / "tensorflow" / "lite" / "micro" / "micro_interpreter.h").is_file():
            raise UserError(
                f"{root} is not a TFLM tree (no tensorflow/lite/micro/micro_interpreter.h); "
                "generate one with tflite-micro's create_tflm_tree.py (docs/boards.md)"
            )

    @cached_property
    def sources(self) -> list[Path]:
        """Every C and C++ source: a generated tree holds exactly the library (no tests, no examples)."""
        return [
            p for p in sorted(self.root.rglob("*")) if p.suffix in (".cc", ".c") and not p.name.endswith("_test.cc")
        ]

    @cached_property
    def fingerprint(self) -> str:
        digest = hashlib.sha256()
        for path in sorted(p for p in self.root.rglob("*") if p.is_file()):
            digest.update(str(path.relative_to(self.root)).encode())
            digest.update(path.read_bytes())
        return digest.hexdigest()[:16]

    @property
    def include_dirs(self) -> list[Path]:
        third_party = self.root / "third_party"
        candidates = [
            self.root,
            third_party / "flatbuffers" / "include",
            third_party / "gemmlowp",
            third_party / "ruy",
            third_party / "kissfft",
            third_party / "cmsis_nn",
            third_party / "cmsis_nn" / "Include",
            third_party / "cmsis" / "CMSIS" / "Core" / "Include",
        ]
        return [path for path in candidates if path.is_dir()]

    @property
    def has_cmsis_nn(self) -> bool:
        return (self.root / "third_party" / "cmsis_nn").is_dir()

    @property
    def is_cortex_m_generic(self) -> bool:
        return (self.root / "tensorflow" / "lite" / "micro" / "cortex_m_generic").is_dir()

    @property
    def defines(self) -> list[str]:
        # TFLM's BUILD_TYPE=release_with_logs: assertions off, error logs kept.
        defines = ["-DTF_LITE_STATIC_MEMORY", "-DNDEBUG"]
        if self.has_cmsis_nn:
            defines.append("-DCMSIS_NN")
        if self.is_cortex_m_generic:
            # A generated cortex_m_generic tree carries no CMSIS device headers: its timer stubs
            # are what the project generator intends (harness times invokes itself).
            defines.append("-DPROJECT_GENERATION")
        return defines

    def optimization(self, source: Path) -> str:
        """TFLM's own choice: kernels and third-party code for speed, the rest for size."""
        parts = source.relative_to(self.root).parts
        return "-O2" if "kernels" in parts or parts[0] == "third_party" else "-Os"

    @property
    def kernels(self) -> str:
        return "cmsis_nn" if self.has_cmsis_nn else "reference"

    def resolver_source(self, model, prefix: str = "HARNESS") -> str:
        operators = list(dict.fromkeys(model_operators(model.data)))
        adds = " ".join(f"(r).{resolver_method(op)}();" for op in operators)
        return (
            f"/* Generated by harness from the model's operators: {', '.join(operators)}. */\n"
            f"#define {prefix}_OP_COUNT {len(operators)}\n"
            f"#define {prefix}_ADD_OPS(r) do {{ {adds} }} while (0)\n"
        )

    def library(self, board, toolchain: str) -> Path:
        """libtflm.a compiled for the board's CPU flags, cached by its whole build recipe."""
        cpu = board.firmware["cpu_flags"]
        flags = f"{cpu} -g -ffunction-sections -fdata-sections -fno-unwind-tables {' '.join(self.defines)} " + " ".join(
            f"-I{path}" for path in self.include_dirs
        )
        rules, objects = [], []
        for index, source in enumerate(self.sources):
            obj = f"obj/{index}_{source.stem}.o"
            objects.append(obj)
            compiler = (
                f"{toolchain}g++ {flags} {self.optimization(source)} -std=c++17 -fno-rtti -fno-exceptions "
                "-fno-threadsafe-statics"
                if source.suffix == ".cc"
                else f"{toolchain}gcc {flags} {self.optimization(source)} -std=c11"
            )
            rules.append(f"{obj}: {source}\n\t@mkdir -p obj\n\t{compiler} -c $< -o $@\n")
        makefile = f"libtflm.a: {' '.join(objects)}\n\t{toolchain}ar rcs $@ $^\n\n" + "\n".join(rules)
        key = hashlib.sha256(f"{self.fingerprint}|{makefile}".encode()).hexdigest()[:16]
        folder = cache_dir() / "tflm" / key
        library = folder / "libtflm.a"
        if library.is_file():
            return library
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "Makefile").write_text(makefile)
        with open(folder / "build.log", "w") as log:
            done = subprocess.run(
                ["make", "-j2"], cwd=folder, stdout=log, stderr=subprocess.STDOUT, timeout=LIBRARY_TIMEOUT_SECONDS
            )
        if done.returncode != 0:
            raise BuildError(f"the TFLM library did not build for {board.id}; log: {folder / 'build.log'}")
        return library
