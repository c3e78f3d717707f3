"""An RFC 2217 client that keeps up with a fast UART: pyserial's own, with the receive path rewritten.

pyserial's reader thread walks every received byte through its Telnet state machine and puts each one
on a queue.Queue, and read() takes them off one by one: a few hundred KiB/s at most, below a 2 Mbaud
line (benchmarks/rfc2217.py). Here the reader copies the runs of data between IAC bytes whole into a
bytearray under a condition variable, and read() takes as much as is there. Telnet negotiation and
RFC 2217 subnegotiation are still pyserial's (its methods are called for them unchanged).
"""

import threading

from serial import rfc2217
from serial.serialutil import PortNotOpenError, SerialException, Timeout

RECV_BYTES = 65536


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
        # pyserial refuses any write_timeout for RFC 2217; its writes are bounded by the socket's own
        # timeout (set as it connects), which is what a write timeout asks for.
        write_timeout, self._write_timeout = self._write_timeout, None
        try:
            super()._reconfigure_port()
        finally:
            self._write_timeout = write_timeout

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
                try:
                    mode, suboption, command = self._take(data, mode, suboption, command)
                except OSError:  # an answer to the server could not be sent: the connection is gone
                    break
        finally:
            with self._ready:
                self._ended = True
                self._ready.notify_all()

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
