"""The referee against hostile clients: body cap, bad Content-Length, stalled bodies, non-finite boxes,
handler errors, and a fuzz of its HTTP endpoints over loopback."""

import csv
import math
import socket
import threading
import time
import urllib.parse
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from harness.errors import UserError
from harness.lpirc import endpoints
from harness.lpirc import referee as referee_module
from harness.lpirc.endpoints import MAX_BODY_BYTES, RESULT_FIELDS
from harness.lpirc.referee import Referee, load_referee_set, save_session

TRUTH = {1: (1, 10, 10, 40, 40), 2: (2, 5, 5, 30, 50)}


@pytest.fixture
def lpirc_folder(tmp_path):
    (tmp_path / "images").mkdir()
    for n, colour in zip(TRUTH, ["red", "green"], strict=True):
        Image.new("RGB", (32, 32), colour).save(tmp_path / "images" / f"{n}.jpg")
    rows = [f"{n} {label} 1.0 {x0} {y0} {x1} {y1}" for n, (label, x0, y0, x1, y1) in TRUTH.items()]
    (tmp_path / "ground_truth.csv").write_text("\n".join(rows) + "\n")
    return tmp_path


@contextmanager
def serving(folder: Path, **options):
    referee = Referee(load_referee_set(str(folder), None, None, seed=1), time_limit=600, **options)
    thread = threading.Thread(target=referee.serve_forever, daemon=True)
    thread.start()
    try:
        yield referee, thread
    finally:
        referee.shutdown()
        referee.server_close()


def exchange(referee: Referee, raw: bytes, half_close: bool = True, timeout: float = 10) -> tuple[int, bytes]:
    """Send raw bytes, (optionally) end our side, and return the final status and the answer's body."""
    with socket.create_connection(referee.server_address[:2], timeout=timeout) as sock:
        sock.sendall(raw)
        if half_close:
            sock.shutdown(socket.SHUT_WR)
        return read_answer(sock)


def read_answer(sock: socket.socket) -> tuple[int, bytes]:
    data = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        data += chunk
    while data.startswith(b"HTTP/1.1 100"):  # an interim answer to Expect: 100-continue
        data = data.split(b"\r\n\r\n", 1)[1]
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/"), data[:200]
    return int(head.split(b" ", 2)[1]), body


def post(referee: Referee, path: str, fields, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    body = urllib.parse.urlencode(fields, doseq=True).encode()
    lines = [f"POST {path} HTTP/1.0", "Content-Type: application/x-www-form-urlencoded"]
    lines += [f"{k}: {v}" for k, v in (headers if headers is not None else {"Content-Length": str(len(body))}).items()]
    return exchange(referee, ("\r\n".join(lines) + "\r\n\r\n").encode() + body)


def login(referee: Referee) -> str:
    status, token = post(referee, "/login", {"username": "team", "password": ""})
    assert status == 200
    return token.decode()


def box_fields(token: str, **changes) -> dict:
    label, x0, y0, x1, y1 = TRUTH[1]
    fields = {"token": token, "image_name": 1, "CLASS_ID": label, "confidence": 0.9}
    fields |= {"xmin": x0, "ymin": y0, "xmax": x1, "ymax": y1}
    return fields | changes


def rss_kib(field: str = "VmRSS") -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"{field} not in /proc/self/status")


@pytest.mark.parametrize("path", ["/login", "/result", "/help"])
def test_a_body_above_the_cap_is_413_before_the_token_and_unread(lpirc_folder, path):
    with serving(lpirc_folder) as (referee, _):
        headers = {"Content-Length": str(MAX_BODY_BYTES + 1)}
        status, body = post(referee, path, {"token": "nonsense"}, headers)
        assert status == 413 and str(MAX_BODY_BYTES).encode() in body
        assert referee.session is None  # nothing was read, nobody logged in
        status, _ = post(referee, "/login", {"username": "team", "password": "", "pad": "x" * 1000})
        assert status == 200  # a body under the cap is taken


def test_a_400_mb_announced_body_is_413_and_the_process_does_not_grow(lpirc_folder):
    sent = b"x" * (8 << 20)  # what the client really sends: 8 MB of the 400 announced
    with serving(lpirc_folder) as (referee, _):
        login(referee)  # warm the server up (threads, imports) before measuring
        peak_resettable = True
        try:
            Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM, the peak RSS
        except OSError:
            peak_resettable = False
        before = rss_kib()
        with socket.create_connection(referee.server_address[:2], timeout=10) as sock:
            head = "POST /result HTTP/1.1\r\nHost: x\r\nContent-Length: 400000000\r\n\r\n"
            sock.sendall(head.encode())

            def push():
                with suppress(OSError):  # the referee answers and closes without reading
                    sock.sendall(sent)

            pusher = threading.Thread(target=push)
            pusher.start()
            status, _ = read_answer(sock)
            pusher.join(10)
        assert status == 413
        grown_kib = rss_kib() - before
        assert grown_kib < 4 * 1024, f"RSS grew by {grown_kib} KiB"
        if peak_resettable:
            peak_kib = rss_kib("VmHWM") - before
            assert peak_kib < 4 * 1024, f"peak RSS grew by {peak_kib} KiB"
        assert login(referee)  # still serving


@pytest.mark.parametrize("length", ["abc", "-5", "+5", "1e3", "0x10", "", "5 5"])
def test_a_malformed_content_length_is_400(lpirc_folder, length):
    with serving(lpirc_folder) as (referee, thread):
        status, body = post(referee, "/login", {"username": "team"}, {"Content-Length": length})
        assert status == 400 and b"Content-Length" in body
        assert thread.is_alive() and referee.session is None


def test_a_huge_content_length_is_413(lpirc_folder):
    with serving(lpirc_folder) as (referee, _):
        assert post(referee, "/login", {"username": "team"}, {"Content-Length": "99999999999"})[0] == 413
        assert post(referee, "/login", {}, {"Content-Length": "9" * 5000})[0] in (413, 431)


def test_a_post_without_content_length_or_with_two_lengths_is_400(lpirc_folder):
    with serving(lpirc_folder) as (referee, _):
        status, body = post(referee, "/login", {"username": "team"}, {})
        assert status == 400 and b"Content-Length" in body
        raw = b"POST /login HTTP/1.0\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\na=b"
        assert exchange(referee, raw)[0] == 400
        raw = b"POST /login HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\na=b\r\n0\r\n\r\n"
        assert exchange(referee, raw)[0] == 400
        assert referee.session is None


@pytest.mark.slow
def test_a_body_shorter_than_announced_is_400_or_408_and_frees_the_thread(lpirc_folder):
    with serving(lpirc_folder, request_timeout=0.5) as (referee, thread):
        raw = b"POST /login HTTP/1.0\r\nContent-Length: 100\r\n\r\nusername=team"
        status, body = exchange(referee, raw)  # our side ended: the referee sees the body end early
        assert status == 400 and b"shorter" in body
        status, _ = exchange(referee, raw, half_close=False)  # our side stays open, silent: only the timeout answers
        assert status == 408
        raw = b"POST /login HTTP/1.0\r\nContent-Length: 10"  # stalls inside the headers
        with socket.create_connection(referee.server_address[:2], timeout=5) as sock:
            sock.sendall(raw)
            assert sock.recv(100) in (b"",)  # http.server drops a connection that times out in the headers
        assert thread.is_alive() and referee.session is None
        assert login(referee)


def test_the_socket_timeout_defaults_to_the_documented_constant(lpirc_folder):
    with serving(lpirc_folder) as (referee, _):
        assert referee.request_timeout == referee_module.REQUEST_TIMEOUT_S > 0


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"confidence": "nan"}, b"confidence must be a finite number"),
        ({"confidence": "inf"}, b"confidence must be a finite number"),
        ({"confidence": "-Infinity"}, b"confidence must be a finite number"),
        ({"xmin": "nan"}, b"xmin must be a finite number"),
        ({"ymax": "inf"}, b"ymax must be a finite number"),
        ({"xmin": "-inf"}, b"xmin must be a finite number"),
        ({"ymin": "1e400"}, b"ymin must be a finite number"),  # overflows to inf
        ({"xmin": 50, "xmax": 40}, b"xmin 50 is above xmax 40"),
        ({"ymin": 41, "ymax": 40}, b"ymin 41 is above ymax 40"),
    ],
)
@pytest.mark.slow
def test_non_finite_or_inverted_boxes_are_400_and_never_stored(lpirc_folder, tmp_path, change, message):
    with serving(lpirc_folder) as (referee, _):
        token = login(referee)
        good = box_fields(token)
        bad = box_fields(token, **change)
        both = {key: [good[key], bad[key]] for key in ("image_name", *RESULT_FIELDS)}
        status, body = post(referee, "/result", {"token": token, **both})
        assert status == 400 and message in body and b"nothing stored" in body
        assert referee.session.results == []  # the whole post is refused, the good box too
        assert post(referee, "/result", good)[0] == 200
        assert post(referee, "/logout", {"token": token})[0] == 200
    summary = save_session(referee, tmp_path / "results", "now")
    rows = (tmp_path / "results" / summary["run_id"] / "results.csv").read_text().splitlines()
    assert len(rows) == 1 and "nan" not in rows[0] and "inf" not in rows[0]


def test_a_degenerate_box_of_zero_size_is_still_taken(lpirc_folder):
    with serving(lpirc_folder) as (referee, _):
        token = login(referee)
        assert post(referee, "/result", box_fields(token, xmin=5, xmax=5, ymin=7, ymax=7))[0] == 200


def test_a_handler_error_is_500_logged_in_one_line_and_the_referee_goes_on(lpirc_folder, monkeypatch, capsys):
    with serving(lpirc_folder) as (referee, thread):
        token = login(referee)

        def broken(self, token):
            raise RuntimeError("scripted failure")

        with monkeypatch.context() as patch:
            patch.setattr(Referee, "active", broken)
            status, body = post(referee, "/verify", {"token": token})
        assert status == 500 and body == b"internal error in the referee\n"
        err = capsys.readouterr().err
        assert "RuntimeError: scripted failure" in err and "/verify" in err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
        assert thread.is_alive()
        assert post(referee, "/verify", {"token": token})[0] == 200


def test_an_error_outside_the_endpoints_is_one_line_not_a_traceback(lpirc_folder, monkeypatch, capsys):
    with serving(lpirc_folder) as (referee, thread):

        def broken(self):
            raise RuntimeError("scripted parse failure")

        with monkeypatch.context() as patch:
            patch.setattr(endpoints.Handler, "parse_request", broken)
            with socket.create_connection(referee.server_address[:2], timeout=5) as sock:
                sock.sendall(b"GET /help HTTP/1.0\r\n\r\n")
                assert sock.recv(100) == b""  # nothing to answer with: the connection is dropped
        deadline = time.monotonic() + 5
        err = ""
        while "scripted parse failure" not in err and time.monotonic() < deadline:
            err += capsys.readouterr().err
            time.sleep(0.01)
        assert "RuntimeError: scripted parse failure" in err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
        assert thread.is_alive() and post(referee, "/help", {})[0] == 200


# --- fuzz -------------------------------------------------------------------------------------------------

PATHS = ["/", "/help", "/login", "/get_token", "/verify", "/no_of_images", "/image", "/result", "/result/"]
NUMBERS = st.one_of(
    st.integers(-10, 10),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["nan", "inf", "-inf", "1e400", "", "x", "0x10", "1_0", " 1 ", "\u0661"]),
)
FIELD_NAMES = ["token", "image_name", "username", "password", *RESULT_FIELDS]


@st.composite
def requests(draw, token: str) -> bytes:
    method = draw(st.sampled_from(["GET", "POST", "POST", "POST", "PUT", "HEAD", "DELETE", "OPTIONS", "PATCH"]))
    path = draw(
        st.one_of(
            st.sampled_from(PATHS),
            st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zs", "Zl", "Zp")), max_size=20).map(
                lambda t: "/" + t
            ),
        )
    )
    if path.strip().rstrip("/") in ("/logout",):  # the fuzz never ends the session
        path = "/help"
    fields = draw(
        st.dictionaries(
            st.one_of(st.sampled_from(FIELD_NAMES), st.text(max_size=8)),
            st.lists(st.one_of(NUMBERS, st.sampled_from([token, "nonsense"]), st.text(max_size=10)), max_size=3),
            max_size=8,
        )
    )
    kind = draw(st.sampled_from(["form", "json", "bytes", "none"]))
    if kind == "form":
        body = urllib.parse.urlencode({k: [str(v) for v in vs] for k, vs in fields.items()}, doseq=True).encode()
    elif kind == "json":
        body = repr(fields).replace("'", '"').encode("utf-8", "surrogatepass")
    elif kind == "bytes":
        body = draw(st.binary(max_size=300))
    else:
        body = b""
    if draw(st.booleans()):  # a query string too
        path += "?" + urllib.parse.urlencode({k: [str(v) for v in vs] for k, vs in fields.items()}, doseq=True)
    length = draw(
        st.one_of(
            st.just(str(len(body))),
            st.just(None),
            st.integers(-(10**12), 10**12).map(str),
            st.integers(0, 6000).map(lambda n: "9" * n),
            st.sampled_from(["abc", "-5", "99999999999", "", " ", "1e3", "+1", str(MAX_BODY_BYTES + 1), "0"]),
        )
    )
    headers = [] if length is None else [f"Content-Length: {length}"]
    extra = st.sampled_from(
        [
            "Content-Type: application/json",
            "Content-Type: application/x-www-form-urlencoded",
            "Transfer-Encoding: chunked",
            "Expect: 100-continue",
            "Connection: keep-alive",
            f"Content-Length: {len(body) + 1}",
            "X-Junk: \x7f\x01",
        ]
    )
    headers += draw(st.lists(extra, max_size=3))
    version = draw(st.sampled_from(["HTTP/1.0", "HTTP/1.1"]))
    head = f"{method} {path} {version}\r\nHost: x\r\n" + "".join(h + "\r\n" for h in headers) + "\r\n"
    return head.encode("utf-8", "surrogatepass") + body


@pytest.mark.slow
def test_fuzzing_the_endpoints_every_request_is_answered_and_a_session_still_works(lpirc_folder, tmp_path, capsys):
    with serving(lpirc_folder, password="secret", request_timeout=2) as (referee, thread):
        token = post(referee, "/login", {"username": "team", "password": "secret"})[1].decode()

        @settings(max_examples=200, deadline=None, database=None)
        @given(raw=requests(token))
        def one(raw):
            status, _ = exchange(referee, raw)
            assert 200 <= status <= 599
            assert thread.is_alive()

        one()
        # The legitimate client plays on: its image, its answer, its logout.
        assert post(referee, "/no_of_images", {"token": token}) == (200, b"2")
        assert post(referee, "/image", {"token": token, "image_name": 1})[0] == 200
        assert post(referee, "/result", box_fields(token))[0] == 200
        assert post(referee, "/logout", {"token": token})[0] == 200
    assert "Traceback" not in capsys.readouterr().err
    summary = save_session(referee, tmp_path / "results", "now")
    assert summary["ended_by"] == "logout"
    with (tmp_path / "results" / summary["run_id"] / "results.csv").open() as handle:
        rows = list(csv.reader(handle))
    assert rows  # at least the legitimate box
    for row in rows:
        confidence, xmin, ymin, xmax, ymax = map(float, row[2:])
        assert all(math.isfinite(v) for v in (confidence, xmin, ymin, xmax, ymax))
        assert xmin <= xmax and ymin <= ymax


def test_the_truth_file_is_read_as_a_ground_truth_file(lpirc_folder):
    (lpirc_folder / "ground_truth.csv").write_bytes(b"1 1 1.0 10 10 40 \xff40\n")
    with pytest.raises(UserError, match=r"^ground-truth file .*ground_truth\.csv is not UTF-8"):
        load_referee_set(str(lpirc_folder), None, None, seed=1)
