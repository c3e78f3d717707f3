"""Getting back to the board after its state was lost: a new handshake after a boot notice, the port waited for
after it went away (or BoardLost at once, where the caller hands the board's samples on), and a sample run
again from the start. Whatever answers after the port came back must be the same board (BoardChanged)."""

import contextlib
import time
from collections.abc import Callable

import serial

from harness.errors import LinkError
from harness.link.protocol import ErrorCode
from harness.link.requests import LOST_STATE, RESETS_PER_SAMPLE, DeviceError, DeviceReset, RequestEngine
from harness.link.roles import Recovery
from harness.link.session import BoardChanged, BoardLost

# The device no longer holds the input or output it was sent: run the sample again.
STATE_LOST_ERRORS = {ErrorCode.INPUT_MISMATCH, ErrorCode.INPUT_INCOMPLETE, ErrorCode.NO_OUTPUT}
RECONNECT_POLL_SECONDS = 0.2


class Recovering(RequestEngine, Recovery):
    """The Recovery role on the request engine."""

    def _recover(self, cause: Exception | None = None) -> None:
        """After a boot notice: a new handshake (which may itself meet another reset). After the port
        went away (USB re-enumeration, a dropped network link): BoardLost at once where the caller hands
        the board's samples on (hands_on_loss), else wait for it to come back here."""
        if not isinstance(cause, serial.SerialException | OSError):
            self._hello_again(probe=False)
            return
        if self.hands_on_loss:
            with contextlib.suppress(serial.SerialException, OSError):
                self.port.close()
            raise BoardLost(cause) from None
        self.reconnect(lambda: True)

    def reconnect(self, wanted: Callable[[], bool]) -> None:
        """Wait for the port that went away (within reconnect_seconds, while `wanted()`), then HELLO."""
        self._reconnect(wanted)
        self._hello_again(probe=True)

    def _hello_again(self, probe: bool) -> None:
        """HELLO after the device lost its state, again after each reset it meets. After the port came back
        (`probe`) whatever is now behind it may be another device: it gets HELLO and nothing else until it
        says it is the same board (hello() checks), with a clean link's tries, not a damaged one's many;
        no answer as harness firmware is BoardChanged too."""
        for _ in range(RESETS_PER_SAMPLE):
            self.stats.resets += 1
            self._probing = probe
            try:
                self.hello()
                return
            except DeviceReset:
                continue
            except BoardChanged:
                raise
            except LinkError as exc:
                if probe and self.identity is not None:
                    raise BoardChanged(self.identity, None, str(exc)) from None
                raise
            finally:
                self._probing = False
        raise LinkError(f"the device reset {RESETS_PER_SAMPLE} times in a row; check its power and watchdog")

    def _reconnect(self, wanted: Callable[[], bool]) -> None:
        """Close the port and open it again as soon as it is back, within reconnect_seconds and while `wanted()`."""
        deadline = time.monotonic() + self.reconnect_seconds
        with contextlib.suppress(serial.SerialException, OSError):
            self.port.close()
        while True:
            try:
                self.port.open()
                break
            except (serial.SerialException, OSError) as exc:
                if not self.reconnect_seconds:
                    raise LinkError(f"the board's port went away ({exc}): its board stopped") from None
                if time.monotonic() > deadline:
                    raise LinkError(
                        f"the port {getattr(self.port, 'port', '')} did not come back within "
                        f"{self.reconnect_seconds:.0f} s ({exc}); check the cable and the board"
                    ) from None
                if not wanted():
                    raise LinkError(
                        f"the port {getattr(self.port, 'port', '')} went away ({exc}); the run's samples were "
                        "done before it came back"
                    ) from None
                time.sleep(RECONNECT_POLL_SECONDS)
        self.stats.reconnects += 1

    def _recovering(self, step):
        """Run `step` (a whole sample, or loading one), starting over after each device reset, or
        when the device no longer holds what it was sent (a reset whose boot notice was lost)."""
        for _ in range(RESETS_PER_SAMPLE):
            try:
                return step()
            except LOST_STATE as lost:
                self._recover(lost)
            except DeviceError as error:
                if error.code not in STATE_LOST_ERRORS:
                    raise
            self.stats.reruns += 1
        raise LinkError(f"the device reset {RESETS_PER_SAMPLE} times during one sample; check its power and watchdog")
