"""An RFC 2217 client that keeps up with a fast UART: pyserial's own, with the receive path rewritten.

pyserial's reader thread walks every received byte through its Telnet state machine and puts each one
on a queue.Queue, and read() takes them off one by one: a few hundred KiB/s at most, below a 2 Mbaud
line (benchmarks/rfc2217.py). Here the reader copies the runs of data between IAC bytes whole into a
bytearray under a condition variable, and read() takes as much as is there. Telnet negotiation and
RFC 2217 subnegotiation are still pyserial's (its methods are called for them unchanged), but the waits for
the server's acknowledgements end as the acknowledgement arrives: pyserial polls every 50 ms, and sleeps
0.1 s after each modem-line change whose answer it ignores (ign_set_control, as on a labgrid place), some
0.5 s of every connection to ser2net. And what arrives is TCP-acknowledged at once, so that ser2net's Nagle
does not hold the board's next answer behind a delayed ACK (docs/farm.md#speed).
"""

import socket
import struct
import threading
from contextlib import suppress

from serial import rfc2217
from serial.serialutil import PortNotOpenError, SerialException, Timeout

RECV_BYTES = 65536
QUICKACK = getattr(socket, "TCP_QUICKACK", None)  # Linux; elsewhere ACKs are left as the system sends them


class Serial(rfc2217.Serial):
    def __init__(self, *args, **kwargs):
        self._buffer = bytearray()
        self._ready = threading.Condition()
        self._ended = False
        super().__init__(*args, **kwargs)

    def open(self):
        with self._ready:
            self._buffer.clear()
            self._ended = False
        try:
            super().open()
        except OSError as exc:  # the server hung up while the options were negotiated (pyserial lets it out)
            if isinstance(exc, SerialException):
                raise
            raise SerialException(f"the server closed the connection ({exc.strerror or exc})") from None

    def _reconfigure_port(self):
        """pyserial's, with the settings' acknowledgements awaited as they come. No write_timeout check:
        pyserial refuses any for RFC 2217, but its writes are bounded by the socket's own timeout (set as it
        connects), which is what a write timeout asks for."""
        if self._socket is None:
            raise SerialException("Can only operate on open ports")
        if not 0 < self._baudrate < 2**32:
            raise ValueError(f"invalid baudrate: {self._baudrate!r}")
        settings = self._rfc2217_port_settings
        settings["baudrate"].set(struct.pack("!I", self._baudrate))
        settings["datasize"].set(struct.pack("!B", self._bytesize))
        settings["parity"].set(struct.pack("!B", rfc2217.RFC2217_PARITY_MAP[self._parity]))
        settings["stopsize"].set(struct.pack("!B", rfc2217.RFC2217_STOPBIT_MAP[self._stopbits]))
        self._acknowledged(settings.values(), "Remote does not accept parameter change (RFC2217)")
        if self._rtscts and self._xonxoff:
            raise ValueError("xonxoff and rtscts together are not supported")
        if self._rtscts:
            self.rfc2217_set_control(rfc2217.SET_CONTROL_USE_HW_FLOW_CONTROL)
        elif self._xonxoff:
            self.rfc2217_set_control(rfc2217.SET_CONTROL_USE_SW_FLOW_CONTROL)
        else:
            self.rfc2217_set_control(rfc2217.SET_CONTROL_USE_NO_FLOW_CONTROL)

    def rfc2217_send_purge(self, value):
        purge = self._rfc2217_options["purge"]
        purge.set(value)
        self._acknowledged([purge], "timeout while waiting for option 'purge'")

    def rfc2217_set_control(self, value):
        control = self._rfc2217_options["control"]
        control.set(value)
        if not self._ignore_set_control_answer:  # ignored: the server handles it in order with what follows
            self._acknowledged([control], "timeout while waiting for option 'control'")

    def _acknowledged(self, items, failure: str) -> None:
        """Wait until the server has acknowledged each of `items` (a rejection raises ValueError, as pyserial's
        own waits do); `failure` names a timeout."""
        with self._ready:
            done = self._ready.wait_for(
                lambda: self._ended or all(item.is_ready() for item in items), self._network_timeout
            )
            if self._ended:
                raise SerialException("connection failed (the RFC 2217 server closed it)")
        if not done:
            raise SerialException(f"{failure}: {list(items)!r}")

    def _telnet_process_subnegotiation(self, suboption):
        super()._telnet_process_subnegotiation(suboption)
        with self._ready:
            self._ready.notify_all()  # an acknowledgement: _acknowledged looks again

    @property
    def in_waiting(self):
        if not self.is_open:
            raise PortNotOpenError()
        return len(self._buffer)

    def read(self, size=1):
        if not self.is_open:
            raise PortNotOpenError()
        timeout = Timeout(self._timeout)
        with self._ready:
            if self._ended and not self._buffer:
                raise SerialException("connection failed (the RFC 2217 server closed it)")
            while len(self._buffer) < size and not self._ended:
                if self._thread is None or not self._thread.is_alive():
                    raise SerialException("connection failed (reader thread died)")
                left = timeout.time_left()
                if left is not None and left <= 0:
                    break
                self._ready.wait(left if left is not None else 1.0)
            data = bytes(self._buffer[:size])
            del self._buffer[:size]
        return data

    def reset_input_buffer(self):
        if not self.is_open:
            raise PortNotOpenError()
        self.rfc2217_send_purge(rfc2217.PURGE_RECEIVE_BUFFER)
        with self._ready:
            self._buffer.clear()

    def _telnet_read_loop(self):
        mode = rfc2217.M_NORMAL
        suboption = None
        command = None
        try:
            while self.is_open:
                try:
                    data = self._socket.recv(RECV_BYTES)
                except TimeoutError:
                    continue
                except OSError:
                    break
                if not data:
                    break
                self._acknowledge_now()
                try:
                    mode, suboption, command = self._take(data, mode, suboption, command)
                except OSError:  # an answer to the server could not be sent: the connection is gone
                    break
        finally:
            with self._ready:
                self._ended = True
                self._ready.notify_all()

    def _acknowledge_now(self) -> None:
        """TCP-acknowledge what was received at once. The host answers each of the board's answers, so Linux
        delays its ACKs (up to 40 ms) to carry them on the host's next data; ser2net, which does not set
        TCP_NODELAY, then holds the board's next answer back (Nagle) until that ACK: up to 40 ms a sample
        (docs/farm.md#speed)."""
        if QUICKACK is not None:
            with suppress(OSError):
                self._socket.setsockopt(socket.IPPROTO_TCP, QUICKACK, 1)

    def _take(self, data: bytes, mode: int, suboption: bytearray | None, command: bytes | None):
        """Data runs to the buffer, Telnet commands to pyserial's handlers; returns the parser's state."""
        received = bytearray()
        i, n = 0, len(data)
        while i < n:
            if mode == rfc2217.M_NORMAL:
                j = data.find(rfc2217.IAC, i)
                end = n if j < 0 else j
                if suboption is not None:
                    suboption += data[i:end]
                else:
                    received += data[i:end]
                if j < 0:
                    break
                mode, i = rfc2217.M_IAC_SEEN, j + 1
                continue
            byte = data[i : i + 1]
            i += 1
            if mode == rfc2217.M_IAC_SEEN:
                mode = rfc2217.M_NORMAL
                if byte == rfc2217.IAC:  # a doubled IAC: the data byte 0xFF
                    if suboption is not None:
                        suboption += byte
                    else:
                        received += byte
                elif byte == rfc2217.SB:
                    suboption = bytearray()
                elif byte == rfc2217.SE:
                    if suboption is not None:
                        self._telnet_process_subnegotiation(bytes(suboption))
                    suboption = None
                elif byte in (rfc2217.DO, rfc2217.DONT, rfc2217.WILL, rfc2217.WONT):
                    command, mode = byte, rfc2217.M_NEGOTIATE
                else:
                    self._telnet_process_command(byte)
            else:  # M_NEGOTIATE: the option after DO, DONT, WILL or WONT
                self._telnet_negotiate_option(command, byte)
                mode = rfc2217.M_NORMAL
        if received:
            with self._ready:
                self._buffer += received
                self._ready.notify_all()
        return mode, suboption, command
