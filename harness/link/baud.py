"""Moving a harness-protocol link to another baud rate after the handshake (SET_BAUD), falling back to the old
rate when the new one does not carry."""

import struct
import time

from harness.errors import LinkError, UserError, setting
from harness.link.protocol import DeviceInfo, Msg
from harness.link.requests import DeviceError, RequestEngine
from harness.link.roles import BaudSwitching

FALLBACK_SECONDS = 1.2  # the device's probation after SET_BAUD (HP_BAUD_PROBATION_MS) and a margin


def _within_max_baud(baud: int, info: DeviceInfo) -> int:
    """baud, if the board's SET_BAUD accepts it (HELLO's max_baud); a higher rate is refused before any sample,
    never silently lowered (the run would record a rate it did not use)."""
    if baud > info.max_baud:
        raise UserError(
            f"{setting('switch_baud')} {baud:,} is above board {info.board_id}'s maximum baud rate {info.max_baud:,}; "
            f"pass at most {info.max_baud}"
        )
    return baud


class BaudSwitcher(RequestEngine, BaudSwitching):
    """The BaudSwitching role on the request engine."""

    def switch_baud(self, baud: int) -> bool:
        """SET_BAUD after the handshake: both ends move to `baud`. The device keeps the new rate only once
        a request with a new sequence number reaches it there (proof that the host heard it), so after
        HELLO at the new rate the host confirms with an empty LINK_TEST. If that fails both ends fall
        back (the device on its own after a second) and the link carries on; if the old rate gets no
        answer either, the device committed after all and the host follows it. True if switched."""
        info = self._require_info()
        old = self.port.baudrate
        if baud == old or info.protocol_version < 2 or not info.max_baud:
            return False
        new = _within_max_baud(baud, info)
        try:
            self.request(Msg.SET_BAUD, struct.pack("<I", new))
            answered = True
        except DeviceError:
            raise
        except LinkError:  # no answer: the device may have switched and lost its answers, or not
            answered = False
        switched_at = time.monotonic()
        if answered:
            self.port.baudrate = new
            saved = self.timeout, self.retries
            self.timeout, self.retries = 0.2, 1  # the tries fit the device's one-second probation
            try:
                self.hello()
                self.request(Msg.LINK_TEST)  # an empty echo, a new sequence number: the device commits the rate
                self.stats.baud = new
                return True
            except LinkError:
                pass
            finally:
                self.timeout, self.retries = saved
        self.port.baudrate = old
        time.sleep(max(0.0, switched_at + FALLBACK_SECONDS - time.monotonic()))
        try:
            self.hello()
        except LinkError as at_old:
            self.port.baudrate = new  # the confirmation reached the device but its answers were lost
            try:
                self.hello()
            except LinkError:
                self.port.baudrate = old
                raise at_old from None
            self.stats.baud = new
            return True
        self.stats.baud_fallbacks += 1
        self.stats.baud = old
        return False
