"""harness/downloads.py against a loopback HTTP stand-in: only a verified file reaches the cache, and every
refusal (a wrong sha256, a trickle past the deadline, an oversize file, a 404) is one line and leaves nothing."""

import hashlib
import http.server
import threading
import time
from pathlib import Path

import pytest

from harness import downloads
from harness.errors import UserError

PAYLOAD = b"a pinned file, " * 100
FIX = "set HARNESS_MODEL_MIRROR to a folder holding it"


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path == "/missing":
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(PAYLOAD)))
        self.end_headers()
        if self.path == "/trickle":  # a byte at a time: no read ever waits long enough for a socket timeout
            for byte in PAYLOAD:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(0.05)
            return
        if self.path == "/stall":  # the headers, then silence: only the deadline ends the wait
            self.wfile.flush()
            time.sleep(10)
            return
        self.wfile.write(PAYLOAD)


@pytest.fixture(scope="module")
def server():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _pin(url: str, **fields) -> downloads.Pinned:
    fields = {"max_bytes": 1 << 20, "sha256": hashlib.sha256(PAYLOAD).hexdigest()} | fields
    return downloads.Pinned(head=f"could not fetch {url}", fix=FIX, **fields)


def _nothing_left(folder: Path):
    assert not folder.exists() or not list(folder.iterdir()), list(folder.iterdir())


def test_a_good_file_is_cached(server, tmp_path):
    target = tmp_path / "cache" / "model.tflite"
    assert downloads.download(f"{server}/good", target, _pin(f"{server}/good")) == target
    assert target.read_bytes() == PAYLOAD
    assert sorted(p.name for p in target.parent.iterdir()) == ["model.tflite"]  # no partial file left


def test_a_file_with_another_sha256_is_refused_and_nothing_left(server, tmp_path):
    url = f"{server}/good"
    with pytest.raises(UserError, match=f"could not fetch {url}: it has sha256 {hashlib.sha256(PAYLOAD).hexdigest()}"):
        downloads.download(url, tmp_path / "cache" / "m", _pin(url, sha256="0" * 64))
    _nothing_left(tmp_path / "cache")


def test_the_callers_verifier_decides_too(server, tmp_path):
    def verify(partial: Path):
        assert partial.read_bytes() == PAYLOAD  # the whole file, before it is placed
        raise UserError("not the pinned archive")

    url = f"{server}/good"
    with pytest.raises(UserError, match="not the pinned archive"):
        downloads.download(url, tmp_path / "cache" / "a.zip", _pin(url, sha256=None, verify=verify))
    _nothing_left(tmp_path / "cache")


def test_a_trickle_past_the_deadline_is_cut_off(server, tmp_path, monkeypatch):
    monkeypatch.setenv(downloads.DEADLINE_ENV, "0.5")
    url = f"{server}/trickle"
    with pytest.raises(UserError) as refused:
        downloads.download(url, tmp_path / "cache" / "m", _pin(url))
    message = str(refused.value)
    assert message.startswith(f"could not fetch {url} (not done within 0.5 s; {downloads.DEADLINE_ENV}"), message
    assert message.endswith(FIX) and "\n" not in message
    _nothing_left(tmp_path / "cache")


def test_a_stall_past_the_deadline_is_cut_off(server, tmp_path, monkeypatch):
    monkeypatch.setenv(downloads.DEADLINE_ENV, "0.5")
    url = f"{server}/stall"
    with pytest.raises(UserError, match=f"could not fetch {url} \\(not done within 0.5 s"):
        downloads.download(url, tmp_path / "cache" / "m", _pin(url))
    _nothing_left(tmp_path / "cache")


def test_an_oversize_file_is_refused(server, tmp_path):
    url = f"{server}/good"
    with pytest.raises(UserError, match=f"could not fetch {url} \\(1500 bytes, more than the 1000 bytes harness"):
        downloads.download(url, tmp_path / "cache" / "m", _pin(url, max_bytes=1000))
    _nothing_left(tmp_path / "cache")


def test_an_oversize_stream_is_cut_at_the_cap(tmp_path):
    source = tmp_path / "mirror" / "m"
    source.parent.mkdir()
    source.write_bytes(PAYLOAD)
    with open(source, "rb") as stream, pytest.raises(UserError, match="larger than 1000 bytes"):
        downloads.store(stream, tmp_path / "cache" / "m", _pin(str(source), max_bytes=1000))
    _nothing_left(tmp_path / "cache")


def test_a_damaged_archive_member_is_refused(tmp_path):
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("m", PAYLOAD)
    damaged = buffer.getvalue().replace(PAYLOAD[:15], b"A pinned file, ", 1)  # the bytes no longer match the CRC
    refused = pytest.raises(UserError, match="could not fetch the wheel \\(a damaged zip archive: Bad CRC-32")
    with zipfile.ZipFile(io.BytesIO(damaged)) as archive, archive.open("m") as member, refused:
        downloads.store(member, tmp_path / "cache" / "m", _pin("the wheel"))
    _nothing_left(tmp_path / "cache")


def test_a_404_is_worded(server, tmp_path):
    url = f"{server}/missing"
    with pytest.raises(UserError) as refused:
        downloads.download(url, tmp_path / "cache" / "m", _pin(url))
    assert str(refused.value) == f"could not fetch {url} (HTTP 404 Not Found); {FIX}"
    _nothing_left(tmp_path / "cache")


def test_a_mirror_folder_is_read_like_any_file(tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "m").write_bytes(PAYLOAD)
    target = tmp_path / "cache" / "m"
    assert downloads.download(str(mirror / "m"), target, _pin("the mirror")).read_bytes() == PAYLOAD
    with pytest.raises(UserError, match=f"could not fetch the mirror \\(mirror file {mirror / 'x'} does not exist"):
        downloads.download(str(mirror / "x"), tmp_path / "cache" / "x", _pin("the mirror"))
    assert sorted(p.name for p in target.parent.iterdir()) == ["m"]


@pytest.mark.parametrize("value", ["0", "-1", "soon", "nan", "inf"])
def test_a_bad_deadline_setting_is_one_line(monkeypatch, value):
    monkeypatch.setenv(downloads.DEADLINE_ENV, value)
    with pytest.raises(UserError, match=f"{downloads.DEADLINE_ENV} is '{value}'; set it to a number of seconds"):
        downloads.deadline_seconds()
