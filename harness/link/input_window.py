"""One input on its way to a harness-protocol device: chunks of the largest frame, a window of them in flight,
going back to the last acknowledged byte after a loss or damage (harness/link/frame_sizer.py sizes them)."""

from enum import Enum, auto

from harness.errors import LinkError
from harness.link.frame_sizer import ANSWER_BYTES, CHUNK_FRAMING
from harness.link.framing import OVERHEAD, encode_frame
from harness.link.input_forms import Encoding, wire_form
from harness.link.protocol import RESPONSE_BIT, ErrorCode, Msg, load_input_payload, parse_error
from harness.link.requests import DAMAGED_LINK_WAIT, PAD, DeviceError, RequestEngine

# While input streams, a lost chunk makes the ones behind it land past the loaded range: go back.
# (FRAME_TOO_LONG too: our chunks fit, so the length field was damaged on the way.)
RESEND_INPUT_ERRORS = {ErrorCode.BAD_CRC, ErrorCode.BAD_OFFSET, ErrorCode.FRAME_TOO_LONG}
# A stream the device cannot decode, before it has acknowledged this input's first chunk, is this input's bytes
# decoded onto another input's stream: the first chunk was lost while the device still held a whole earlier
# input (its INVOKE lost too). Offset 0 starts afresh. After the first chunk was acknowledged it is a fault.
RESTART_INPUT_ERRORS = {ErrorCode.BAD_PAYLOAD}
# A device answers each input chunk as it arrives, during an invoke too (two slots) or once it ends (chunks
# sent ahead are collected with the INVOKE's answer): silence past the wire time and this is a lost chunk.
INPUT_ANSWER_WAIT = 0.5
MAX_WINDOW = 8
MIN_WINDOW_FRAME = 256  # below this, framing overhead outweighs what a window gains


class Verdict(Enum):
    """What an answer (or silence) to the chunks in flight means."""

    ACCEPTED = auto()  # one chunk acknowledged
    RESEND = auto()  # go back to the last acknowledged byte: a chunk lost or damaged
    RESTART = auto()  # go back to offset 0: the device is not on this input's stream


class InputLoad:
    """One input on its way to the device (DeviceClient.load_input): chunks of the largest frame, a
    window of them in flight, going back to the last acknowledged byte after a loss or damage.
    send_ahead puts the first chunks out before an INVOKE's answer is in (one-slot pipelining); finish
    sends the rest and waits until the device holds the whole input."""

    def __init__(self, client: RequestEngine, data: bytes):
        info = client._require_info()
        if len(data) != info.input.bytes:
            raise LinkError(f"input is {len(data)} bytes, the device expects {info.input.bytes}")
        self.client = client
        # Offsets and acknowledgements count the wire form's bytes.
        self.form = wire_form(data, info.input, info.input_encodings, info.codec_row_max)
        self.data = self.form.data
        self.tensor_bytes = len(data)
        self.head = 4 if self.form.encoding == Encoding.RAW else 5  # the offset, and the encoding when not raw
        # Bytes in flight are bounded by the device's frame buffer plus its link buffer; frames small
        # enough that three fit keep the line busy while the device handles one and the host is slow
        # to send the next.
        self.budget = info.max_request_frame + info.rx_buffer_bytes
        largest_frame = min(info.max_request_frame, max(self.budget // 3, MIN_WINDOW_FRAME))
        self.largest = min(info.max_request_payload, largest_frame - OVERHEAD) - self.head
        self._resize()
        self.acked = self.sent = 0
        self.outstanding: dict[int, int] = {}  # sequence number -> input bytes loaded once it is acknowledged
        self.started = False  # the device acknowledged a chunk at offset 0 since this input last started
        self.ahead: set[int] = set()  # chunks sent ahead, whose answers may come while others are awaited
        self.first_chunks: set[int] = set()  # sequence numbers of chunks sent at offset 0

    def _resize(self) -> None:
        """Chunk and window for the byte error rate the link has shown (harness/link/frame_sizer.py)."""
        bytes_per_second = (getattr(self.client.port, "baudrate", 0) or 115200) / 10
        sizing = self.client.frame_sizer.choose(self.largest, self.budget, MAX_WINDOW, bytes_per_second)
        self.chunk, self.window = sizing.chunk, sizing.window
        self.client.stats.chunk_bytes = self.chunk

    def _frame(self) -> bytes:
        piece = self.data[self.sent : self.sent + self.chunk]
        seq = self.client._next_seq()
        self.client.stats.frames_sent += 1
        frame = encode_frame(Msg.LOAD_INPUT, seq, load_input_payload(self.sent, piece, self.form.encoding))
        self.client.stats.input_wire_bytes += len(frame)
        self.sent += len(piece)
        self.outstanding[seq] = self.sent
        if self.sent == len(piece):
            self.first_chunks.add(seq)
        return frame

    def send_ahead(self, limit: int) -> None:
        """As many chunks as fit `limit` bytes (framing and padding included), in one burst, their answers
        kept for finish() while the client awaits other answers."""
        client = self.client
        pad = PAD if client._damaged_link else b""
        burst = b""
        while self.sent < len(self.data):
            size = min(self.chunk, len(self.data) - self.sent) + self.head + OVERHEAD
            if len(burst) + size + len(pad) > limit:
                break
            burst += self._frame()
        self.ahead.update(self.outstanding)
        client._expected.update(self.outstanding)
        if burst:
            client.port.write(burst + pad)

    def finish(self) -> None:
        client = self.client
        failures = 0
        while self.acked < len(self.data):
            burst = b""
            while len(self.outstanding) < self.window and self.sent < len(self.data):
                burst += self._frame()
            if burst:
                # A chunk that lost a byte is completed by the next one; only one nothing follows needs padding.
                last = self.sent == len(self.data) or self.window == 1
                client.port.write(burst + (PAD if client._damaged_link and last else b""))
            wait = min(client.timeout, DAMAGED_LINK_WAIT if client._damaged_link else INPUT_ANSWER_WAIT)
            if client.lossless:
                wait = client.timeout
            in_flight = max(self.window, len(self.outstanding)) * (self.chunk + CHUNK_FRAMING)
            event = client._next_answer(set(self.outstanding), wait + client.wire_seconds(in_flight))
            verdict = self._verdict(event, failures)
            exchange = self.chunk + CHUNK_FRAMING + ANSWER_BYTES
            if verdict == Verdict.ACCEPTED:
                self.acked = max(self.acked, int.from_bytes(event.payload[:4], "little"))
                self.started |= event.seq in self.first_chunks
                del self.outstanding[event.seq]
                failures = 0
                client.frame_sizer.delivered(exchange)
                continue
            failures += 1
            client.frame_sizer.fault(exchange)
            if failures > client._retries():
                raise LinkError(f"input not accepted after {failures} attempts; check the link and the baud rate")
            client.stats.go_backs += 1
            drained_to = self._drain()
            self.acked = 0 if verdict == Verdict.RESTART else drained_to
            self.started &= verdict != Verdict.RESTART
            client.stats.resends += len(self.outstanding)
            self.outstanding.clear()
            self.sent = self.acked
            self._resize()
        client.stats.byte_error_rate = client.frame_sizer.byte_error_rate
        client.stats.input_tensor_bytes += self.tensor_bytes
        client.stats.inputs_encoded += self.form.encoding != Encoding.RAW
        self.forget()

    def _verdict(self, event, failures: int) -> Verdict:
        """The answer (None: silence) judged; an error that no going back mends is raised."""
        if event is not None and event.type == Msg.LOAD_INPUT | RESPONSE_BIT:
            holds = int.from_bytes(event.payload[:4], "little")
            # More than this input has: the device is on another input's stream.
            return Verdict.ACCEPTED if holds <= len(self.data) else Verdict.RESTART
        if event is None or event.type != Msg.ERROR:
            return Verdict.RESEND
        code, text = parse_error(event.payload)
        if code in RESTART_INPUT_ERRORS and not self.started and event.seq not in self.first_chunks:
            return Verdict.RESTART
        if code not in RESEND_INPUT_ERRORS:
            raise DeviceError(code, text)
        if code == ErrorCode.BAD_OFFSET and failures >= 2:
            return Verdict.RESTART  # the device holds less than it acknowledged: a reset whose notice was lost
        return Verdict.RESEND

    def _drain(self) -> int:
        """Before going back: an empty LINK_TEST behind the frames still on their way. The device answers
        in order, so once its echo is back every earlier frame was handled (acknowledgements among them
        count) or lost, and resent frames cannot land in a frame broken on the way."""
        client, outstanding, acked = self.client, self.outstanding, self.acked
        marker = client._next_seq()
        # Padding ahead completes a chunk that lost a byte, which would otherwise swallow the marker's head.
        client._write(encode_frame(Msg.LINK_TEST, marker), pad_ahead=True)
        while True:
            event = client._next_answer({*outstanding, marker}, DAMAGED_LINK_WAIT)
            if event is None or event.seq == marker:
                return acked
            if event.type == Msg.LOAD_INPUT | RESPONSE_BIT:
                acked = max(acked, int.from_bytes(event.payload[:4], "little"))
            outstanding.pop(event.seq, None)

    def forget(self) -> None:
        """Stop keeping answers to the chunks sent ahead: once loaded, or given up for a rerun."""
        for seq in self.ahead:
            self.client._expected.discard(seq)
            self.client._held.pop(seq, None)
        self.ahead.clear()
