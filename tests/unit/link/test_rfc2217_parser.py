"""harness's RFC 2217 receive path (harness/link/rfc2217_fast.py) on Telnet streams cut anywhere: a doubled
IAC split across two receives is one 0xFF, and a subnegotiation split the same way reaches pyserial whole.
(Against a real ser2net: tests/e2e/labgrid/test_rfc2217_fast.py.)"""

import random

from serial import rfc2217

from harness.link.rfc2217_fast import Serial

IAC, SB, SE = rfc2217.IAC, rfc2217.SB, rfc2217.SE


class Recording(Serial):
    def __init__(self):
        super().__init__()  # no port: not opened
        self.subnegotiations = []

    def _telnet_process_subnegotiation(self, suboption):
        self.subnegotiations.append(suboption)


def _feed(port: Recording, chunks) -> bytes:
    state = (rfc2217.M_NORMAL, None, None)
    for chunk in chunks:
        state = port._take(chunk, *state)
    return bytes(port._buffer)


def test_a_doubled_iac_split_across_receives_is_one_data_byte():
    assert _feed(Recording(), [b"ab" + IAC, IAC + b"cd"]) == b"ab\xffcd"
    assert _feed(Recording(), [b"ab" + IAC + IAC, b"", IAC, IAC]) == b"ab\xff\xff"


def test_every_cut_of_a_stream_gives_the_same_data_and_subnegotiations():
    data = bytes(random.Random(3).randbytes(3000))
    sub = bytes([rfc2217.COM_PORT_OPTION[0], 101]) + b"\x00\x01\xc2\x00" + IAC + IAC  # a 0xFF in the value
    wire = data[:1000].replace(IAC, IAC + IAC) + IAC + SB + sub.replace(IAC + IAC, IAC + IAC) + IAC + SE
    wire += data[1000:].replace(IAC, IAC + IAC)
    rng = random.Random(5)
    for _ in range(200):
        cuts = sorted(rng.sample(range(1, len(wire)), rng.randint(1, 30)))
        chunks = [wire[a:b] for a, b in zip([0, *cuts], [*cuts, len(wire)], strict=True)]
        port = Recording()
        assert _feed(port, chunks) == data
        assert port.subnegotiations == [sub.replace(IAC + IAC, IAC)]
