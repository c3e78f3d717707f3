"""QEMU boards (kind "emulated"): harness builds the board's firmware (with the model when a TFLM tree is
given, else self-test firmware) and runs it under QEMU for the connection (harness/device/qemu.py), its
UART0 on a local socket. The link has no fault proxy and no baud switch. With --protocol eembc the firmware
is the card's MLPerf Tiny DUT (harness/firmware/eembc_dut.py), the same C DUT the virtual board serves."""

from collections.abc import Iterator
from contextlib import contextmanager

from harness.device.drivers.base import Driver, Endpoint
from harness.device.qemu import qemu_link
from harness.firmware.assemble import LayerTraceBuild
from harness.firmware.build import DEFAULT_TRACE, build_firmware
from harness.link.registry import PROTOCOL_NAMES
from harness.model.tflite_file import read_tflite


class EmulatedDriver(Driver):
    kind = "emulated"
    protocols = PROTOCOL_NAMES
    injects_faults = False
    builds_at_start = True

    @contextmanager
    def start(self) -> Iterator[Endpoint]:
        frontend = read_tflite(self.options.frontend) if self.options.frontend else None
        from harness.device.planted_fault import planted_fault_op  # a test and debug aid (docs/debug.md)

        fault = planted_fault_op(self.model.path if self.model else None)
        trace = LayerTraceBuild(plant_fault_op=fault) if fault >= 0 else DEFAULT_TRACE
        firmware = build_firmware(
            self.board, self.model, self.options.tflm, frontend, trace=trace, dut=self.dut_build()
        )
        with qemu_link(self.board, firmware.elf) as link:
            # QEMU is gone with its socket, which loses nothing: a QEMU the host starves is waited for
            yield Endpoint(link, firmware=firmware.provenance(), comes_back=False, lossless=True)
