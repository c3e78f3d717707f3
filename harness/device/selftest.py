"""`harness link-test`: push bytes through the protocol both ways, check every one, time it; then
time the device's fixed PERF workload a few times to show whether its counts repeat."""

import random
import time
from dataclasses import dataclass, field

from harness.boards import Board
from harness.device.figures import Figure, latency_figure
from harness.errors import LinkError
from harness.link.roles import LinkTesting, require
from harness.link.session import DeviceSession, LinkStats

PERF_ITERATIONS = 1000
MIN_ECHO = 64
PERF_REPEATS = 3


@dataclass
class PerfRun:
    ticks: int | None
    checksum: int
    figure: Figure


@dataclass
class LinkTestReport:
    board: str
    build_id: str
    frame_payload: int
    bytes_sent: int = 0
    bytes_received: int = 0
    frames: int = 0
    mismatches: int = 0
    seconds: float = 0.0
    stats: LinkStats | None = None
    shrinks: int = 0  # echo frames halved after a frame found no valid answer
    baud: int = 0  # the rate the link ran at (after any SET_BAUD switch)
    max_baud: int = 0  # the highest rate the device's SET_BAUD accepts (HELLO), 0: none
    baud_applies: bool = True  # False: USB CDC, the link has no baud rate (HELLO)
    perf: list[PerfRun] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.mismatches == 0 and len({run.checksum for run in self.perf}) <= 1

    def perf_repeats_exactly(self) -> bool:
        return len({run.figure.value for run in self.perf}) == 1


def run_link_test(client: DeviceSession, board: Board, total_bytes: int, advance=lambda n: None) -> LinkTestReport:
    info, tester = client.info, require(client, LinkTesting)
    size = min(info.max_request_payload, info.max_response_payload)
    report = LinkTestReport(board.id, info.build_id, size)
    report.baud, report.max_baud, report.baud_applies = client.stats.baud, info.max_baud, info.baud_applies
    rng = random.Random(0x5EED)
    start = time.perf_counter()
    while report.bytes_sent + report.bytes_received < total_bytes:
        payload = rng.randbytes(size)
        try:
            echoed = tester.echo(payload)
        except LinkError:
            if size <= MIN_ECHO:
                raise
            size = max(MIN_ECHO, size // 2)  # a damaged link: smaller frames get through more often
            report.shrinks += 1
            continue
        report.frames += 1
        report.mismatches += echoed != payload
        report.bytes_sent += len(payload)
        report.bytes_received += len(echoed)
        advance(len(payload) + len(echoed))
    report.seconds = time.perf_counter() - start
    report.frame_payload = size  # smaller than at the start if a damaged link made it halve
    report.stats = client.stats
    for _ in range(PERF_REPEATS):
        measured, checksum = tester.perf(PERF_ITERATIONS)
        report.perf.append(PerfRun(measured.ticks, checksum, latency_figure(measured, board)))
    return report


def describe(report: LinkTestReport, latency_source: str) -> list[str]:
    rate = (report.bytes_sent + report.bytes_received) / report.seconds if report.seconds else 0.0
    stats = report.stats
    lines = [
        f"link test on {report.board} ({report.build_id}): {report.frames} echo frames of {report.frame_payload} bytes",
        f"  sent {report.bytes_sent:,} B, received {report.bytes_received:,} B in {report.seconds:.2f} s "
        f"({rate / 1e3:,.1f} kB/s both ways, {report.bytes_sent / report.seconds / 1e3:,.1f} kB/s each way)",
        f"  payload mismatches {report.mismatches}, resends {stats.resends}, corrupt frames {stats.corrupt_frames}, "
        f"stale frames {stats.stale_frames}; every frame's CRC-32 checked",
    ]
    if not report.baud_applies:
        lines.append("  baud: does not apply (the device's link is USB CDC: it ignores the port's rate)")
    else:
        switch = f"SET_BAUD up to {report.max_baud:,}" if report.max_baud else "no SET_BAUD"
        lines.append(f"  baud: {report.baud:,} ({switch}; baud fallbacks {stats.baud_fallbacks})")
    if stats.faults_injected is not None:
        f = stats.faults_injected
        lines.append(
            f"  faults injected: {f['dropped']} dropped, {f['corrupted']} corrupted, {f['duplicated']} duplicated "
            f"bytes, {f['resets']} resets; recovered with {stats.resends} resends, {stats.resets} new handshakes, "
            f"{report.shrinks} frame-size halvings"
        )
    figures = [run.figure.text() for run in report.perf]
    unit = f"({latency_source}{', QEMU -icount' if report.perf[0].figure.unit == 'instructions' else ''})"
    verdict = "repeat exactly" if report.perf_repeats_exactly() else "vary"
    lines.append(
        f"  PERF ({PERF_ITERATIONS} x CRC-32 of 256 B), {len(report.perf)} runs: {', '.join(figures)} {unit}; {verdict}"
    )
    return lines
