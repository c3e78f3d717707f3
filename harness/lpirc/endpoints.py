"""An HTTP referee with the LPIRC endpoints, for networked boards and offloading systems.

Form fields as the LPIRC referee took them (POST, or GET with a query string):
  /help                          usage text
  /login (/get_token)            username, password -> token; starts the clock and the power meter
  /verify                        token -> 200 or 401
  /no_of_images                  token -> the number of images
  /image                         token, image_name = 1-based index -> the JPEG
  /result                        token, image_name, CLASS_ID, confidence, xmin, xmax, ymin, ymax
                                 (fields may repeat: several boxes in one post)
  /logout                        token -> stops the meter; the session is scored
A bad or expired token gets 401, a bad index or mismatched field counts 406. Once the session is over
(logout or the time limit) every request gets 401, /help, /login and result posts included, and the
session is scored with what came in time; logging in again during the session returns the same token and
does not restart the clock. A meter that fails to start refuses the login with 503.

Limits, checked before the token: a body may hold at most 1 MiB (MAX_BODY_BYTES); a larger Content-Length
gets 413 and the body is not read. A POST needs a Content-Length (decimal digits); a malformed one gets 400,
as does a body shorter than announced; a connection silent for 10 s (REQUEST_TIMEOUT_S) is answered 408
and closed. confidence and the box corners must be finite, with xmin <= xmax and ymin <= ymax, else 400.
An error inside the referee gets 500 and one line on its stderr; it goes on serving.
"""

import contextlib
import math
import re
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

from harness.eval.detection import Box

if TYPE_CHECKING:
    from harness.lpirc.referee import Referee, Session

HELP = __doc__
RESULT_FIELDS = ("CLASS_ID", "confidence", "xmin", "xmax", "ymin", "ymax")
MAX_BODY_BYTES = 1 << 20  # a request body's cap (a result post of thousands of boxes fits)
_DIGITS = re.compile(r"[0-9]+")


def box_problem(box: Box) -> str | None:
    """Why a posted box cannot be stored (a non-finite number or inverted corners), or None."""
    if not math.isfinite(box.confidence):
        return f"confidence must be a finite number, not {box.confidence}"
    for name, value in zip(("xmin", "ymin", "xmax", "ymax"), box.coords(), strict=True):
        if not math.isfinite(value):
            return f"{name} must be a finite number, not {value}"
    if box.xmin > box.xmax:
        return f"xmin {box.xmin:g} is above xmax {box.xmax:g}"
    if box.ymin > box.ymax:
        return f"ymin {box.ymin:g} is above ymax {box.ymax:g}"
    return None


class _Refused(Exception):
    """A request answered with an error status before it reaches the endpoints."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


class Handler(BaseHTTPRequestHandler):
    """One request to the referee: its limits checked, then its endpoint answered."""

    server: "Referee"

    def setup(self):
        self.timeout = self.server.request_timeout  # StreamRequestHandler sets it on the socket
        super().setup()

    def log_message(self, format, *args):
        pass

    def _content_length(self) -> int | None:
        """The announced body length: None when absent; 400 when malformed, 413 above the cap."""
        values = self.headers.get_all("Content-Length") or []
        if not values:
            return None
        if len({v.strip() for v in values}) != 1 or not _DIGITS.fullmatch(values[0].strip()):
            raise _Refused(HTTPStatus.BAD_REQUEST, "Content-Length must be one non-negative decimal number\n")
        digits = values[0].strip().lstrip("0") or "0"
        if len(digits) > len(str(MAX_BODY_BYTES)) or int(digits) > MAX_BODY_BYTES:  # no int() of 5000 digits
            raise _Refused(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"a request body may hold at most {MAX_BODY_BYTES} bytes\n"
            )
        return int(digits)

    def _fields(self) -> dict[str, list[str]]:
        length = self._content_length()  # before anything else: the cap applies before the token
        fields = parse_qs(urlsplit(self.path).query, keep_blank_values=True)
        if self.command == "POST":
            if self.headers.get("Transfer-Encoding"):
                raise _Refused(HTTPStatus.BAD_REQUEST, "chunked bodies are not taken; send a Content-Length\n")
            if length is None:
                raise _Refused(HTTPStatus.BAD_REQUEST, "a POST needs a Content-Length\n")
            try:
                raw = self.rfile.read(length) if length else b""  # length <= MAX_BODY_BYTES
            except TimeoutError:
                raise _Refused(HTTPStatus.REQUEST_TIMEOUT, "the body did not arrive in time\n") from None
            if len(raw) < length:
                raise _Refused(HTTPStatus.BAD_REQUEST, "the body is shorter than its Content-Length\n")
            body = raw.decode("utf-8", "replace")
            for key, values in parse_qs(body, keep_blank_values=True).items():
                fields.setdefault(key, []).extend(values)
        return fields

    def _send(self, status: int, body: bytes | str, kind: str = "text/plain; charset=utf-8") -> None:
        data = body.encode() if isinstance(body, str) else body
        self._answered = True
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self._route()

    def do_POST(self):
        self._route()

    def _route(self):
        """Every request gets an answer; an error is answered 500 and logged in one line, never raised."""
        self._answered = False
        try:
            try:
                self._endpoint()
            except _Refused as refused:
                self.close_connection = True  # an unread or partial body may follow
                self._send(refused.status, refused.message)
        except (ConnectionError, TimeoutError) as exc:  # the client went away or stalled mid-answer
            self.close_connection = True
            self._log_error(exc)
        except Exception as exc:
            self.close_connection = True
            self._log_error(exc)
            if not self._answered:
                with contextlib.suppress(OSError):
                    self._send(HTTPStatus.INTERNAL_SERVER_ERROR, "internal error in the referee\n")

    def _log_error(self, exc: BaseException) -> None:
        self.server.log_line(f"{self.command} {self.path[:200]!r}: {type(exc).__name__}: {exc}")

    def _endpoint(self):
        path = urlsplit(self.path).path.rstrip("/") or "/"
        fields = self._fields()
        first = {k: v[0] for k, v in fields.items()}
        if self.server.over():
            return self._send(HTTPStatus.UNAUTHORIZED, "the session is over\n")
        if path in ("/", "/help"):
            return self._send(HTTPStatus.OK, HELP)
        if path in ("/login", "/get_token"):
            token = self.server.login(first.get("username", ""), first.get("password", ""))
            if token is None and self.server.meter_error is not None and self.server.session is None:
                return self._send(HTTPStatus.SERVICE_UNAVAILABLE, "the power meter failed to start\n")
            return self._send(HTTPStatus.OK, token) if token else self._send(HTTPStatus.UNAUTHORIZED, "refused\n")
        session = self.server.active(first.get("token"))
        if session is None:
            return self._send(HTTPStatus.UNAUTHORIZED, "bad or expired token\n")
        if path == "/verify":
            return self._send(HTTPStatus.OK, "ok\n")
        if path == "/no_of_images":
            return self._send(HTTPStatus.OK, str(len(self.server.images.images)))
        if path == "/image":
            return self._image(session, first.get("image_name", ""))
        if path == "/result":
            return self._result(session, fields)
        if path == "/logout":
            self.server.finish("logout")
            return self._send(HTTPStatus.OK, "logged out\n")
        return self._send(HTTPStatus.NOT_FOUND, "unknown path; see /help\n")

    def _index(self, text: str) -> int | None:
        try:
            index = int(text)
        except ValueError:
            return None
        return index if 1 <= index <= len(self.server.images.images) else None

    def _image(self, session: "Session", name: str):
        index = self._index(name)
        if index is None:
            return self._send(HTTPStatus.NOT_ACCEPTABLE, f"image_name must be 1..{len(self.server.images.images)}\n")
        try:
            data = self.server.images.images[index - 1].read_bytes()
        except OSError:
            return self._send(HTTPStatus.INTERNAL_SERVER_ERROR, "image file missing\n")
        with self.server.lock:
            session.images_sent.add(index)
        return self._send(HTTPStatus.OK, data, "image/jpeg")

    def _result(self, session: "Session", fields: dict[str, list[str]]):
        names = fields.get("image_name", [])
        columns = [fields.get(f, []) for f in RESULT_FIELDS]
        if not names or any(len(c) != len(names) for c in columns):
            return self._send(HTTPStatus.NOT_ACCEPTABLE, f"image_name and {', '.join(RESULT_FIELDS)} must pair up\n")
        boxes = []
        for name, label, confidence, xmin, xmax, ymin, ymax in zip(names, *columns, strict=True):
            index = self._index(name)
            try:
                if index is None:
                    raise ValueError
                corners = (float(xmin), float(ymin), float(xmax), float(ymax))
                box = Box(index, int(label), float(confidence), *corners)
            except ValueError:
                return self._send(HTTPStatus.NOT_ACCEPTABLE, "a result field is not a number or a valid index\n")
            problem = box_problem(box)
            if problem:
                return self._send(HTTPStatus.BAD_REQUEST, f"image {index}: {problem}; nothing stored\n")
            boxes.append(box)
        if not self.server.store(session, boxes):
            return self._send(HTTPStatus.UNAUTHORIZED, "bad or expired token\n")
        return self._send(HTTPStatus.OK, f"{len(boxes)} result(s) stored\n")
