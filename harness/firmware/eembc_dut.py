"""MLPerf Tiny / EEMBC DUT firmware built by harness (`--protocol eembc`, docs/eembc.md): the same C DUT the
virtual board serves (firmware/eembc/ee_dut.c), run by firmware/app/eembc_main.c over the board's link with
the TFLM runner, in place of harness's protocol core. What the build settles is what the reference
submission of the card's benchmark settles: the model name `profile` answers, how th_load_tensor takes the
bytes it is sent, what th_results prints, the serial rate and whether timestamps are lines or pin pulses.
"""

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # light: the virtual board's process imports the names below
    from harness.model.card import EembcDut
    from harness.model.tflite_file import TfliteModel

# What the DUT computes (harness/model/dut.py kinds), as firmware/eembc/ee_dut.h's ee_computation.
EEMBC_COMPUTATIONS = {"model": 0, "reconstruction_mse": 1}
EEMBC_MODES = ("performance", "energy")  # upstream's EE_CFG_ENERGY_MODE 0 and 1 (accuracy runs performance)
# th_serialport_initialize of the reference submissions: 115200 in performance mode, 9600 in energy mode,
# when the runner's IO manager relays the DUT's serial line.
EEMBC_BAUD = {"performance": 115200, "energy": 9600}
# What m-model-[…] says for a card without an [eembc] table: one the runner has tests for.
EEMBC_DEFAULT_MODEL = "vww01"


@dataclass(frozen=True)
class EembcDutBuild:
    """One DUT firmware's settings, from the model card's [eembc] table and output kind."""

    model: str = EEMBC_DEFAULT_MODEL  # what `profile` answers as m-model-[…]
    uint8_input: bool = False  # int8 input sent as uint8, less 128 on the device (VWW, IC)
    computation: str = "model"  # a key of EEMBC_COMPUTATIONS
    mode: str = "performance"  # a key of EEMBC_BAUD

    @classmethod
    def for_card(cls, eembc: "EembcDut | None", computation: str = "model", mode: str = "performance"):
        if eembc is None:
            return cls(computation=computation, mode=mode)
        return cls(eembc.model, eembc.input == "uint8", computation, mode)

    @property
    def energy(self) -> bool:
        return self.mode == "energy"

    @property
    def baud(self) -> int:
        return EEMBC_BAUD[self.mode]

    def buffer_bytes(self, model: "TfliteModel | None") -> int:
        """The db buffer: what th_load_tensor takes (4 bytes a feature for float32 features)."""
        if model is None:
            return 1
        elements = model.input.bytes // model.input.numpy_dtype.itemsize
        return 4 * elements if self.computation == "reconstruction_mse" else model.input.bytes

    def config_lines(self, model: "TfliteModel | None", timestamp_pin: str) -> list[str]:
        """This build's lines of harness_build_config.h (`timestamp_pin`: the board's, for energy mode)."""
        model_name = '"' + self.model.replace("\\", "\\\\").replace('"', '\\"') + '"'
        return [
            "#define HP_EEMBC 1",
            f"#define HP_EEMBC_MODEL {model_name}",
            f"#define HP_EEMBC_BUFFER_BYTES {self.buffer_bytes(model)}u",
            f"#define HP_EEMBC_COMPUTATION {EEMBC_COMPUTATIONS[self.computation]}",
            f"#define HP_EEMBC_UINT8_INPUT {int(self.uint8_input)}",
            f"#define HP_EEMBC_ENERGY_MODE {int(self.energy)}",
        ] + ([f"#define HP_EEMBC_TIMESTAMP_PIN {timestamp_pin}"] if self.energy else [])
