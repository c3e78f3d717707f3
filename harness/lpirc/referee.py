"""The LPIRC referee: the images it serves, the session (login, clock, power meter, results in time) and its
score, saved as a run folder. Its HTTP endpoints and their limits: harness/lpirc/endpoints.py (served at /help)."""

import contextlib
import ipaddress
import secrets
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from pathlib import Path

from harness.digits import int_or_none
from harness.energy.meter import Meter
from harness.energy.trace import JOULES_PER_WH, PowerTrace
from harness.errors import UserError, setting
from harness.eval.detection import Box, mean_average_precision, read_boxes
from harness.eval.order import shuffle_in_groups
from harness.lpirc.endpoints import Handler
from harness.reading import MAP_TRUTH

TRUTH_FILES = ("ground_truth.csv", "csv/golden_output.csv")
REQUEST_TIMEOUT_S = 10.0  # a connection's socket timeout: a silent client frees its thread after this


@dataclass
class RefereeSet:
    """What the referee serves: image n (1-based) is images[n - 1]; truth uses served indices."""

    name: str
    images: list[Path]
    boxes: list[Box] | None = None  # detection ground truth (scored by mAP)
    labels: list[int] | None = None  # one class per image (scored by accuracy)
    order: list[int] = field(default_factory=list)  # served index - 1 -> index in the source order
    seed: int = 0


def _numbered_images(folder: Path) -> dict[int, Path]:
    numbered = ((int_or_none(p.stem), p) for p in folder.glob("*.jpg"))  # ASCII digits: an Arabic-Indic 1 is no image 1
    return {n: p for n, p in numbered if n is not None and n >= 0}


def load_referee_set(dataset: str, subset: str | None, limit: int | None, seed: int) -> RefereeSet:
    """An LPIRC-layout folder (images/<n>.jpg plus 7-column ground truth) or a harness dataset and subset."""
    root = Path(dataset)
    truth_file = next((root / f for f in TRUTH_FILES if (root / f).is_file()), None)
    if truth_file is not None and (root / "images").is_dir():
        numbered = _numbered_images(root / "images")
        ids = sorted(numbered)[:limit] if limit else sorted(numbered)
        if not ids:
            raise UserError(f"{root / 'images'} holds no numbered JPEGs (1.jpg, 2.jpg, ...)")
        order = shuffle_in_groups(len(ids), seed)
        served = {ids[source]: n for n, source in enumerate(order, 1)}
        truth = [b for b in read_boxes(truth_file, MAP_TRUTH) if b.image in served]
        boxes = [Box(served[b.image], b.label, b.confidence, *b.coords()) for b in truth]
        return RefereeSet(root.name, [numbered[ids[s]] for s in order], boxes=boxes, order=order, seed=seed)
    from harness.eval.dataset import load_dataset
    from harness.eval.sampling import select_samples
    from harness.eval.subsets import parse_subsets

    data = load_dataset(dataset)
    subsets = parse_subsets(subset or "all")
    samples = select_samples(data.samples, subsets, limit)
    if not samples:
        raise UserError(f"dataset {data.name} has no samples in {subset}; choose another {setting('subset')}")
    order = shuffle_in_groups(len(samples), seed)
    ordered = [samples[s] for s in order]
    labels = [subsets[0].label(s) for s in ordered]
    return RefereeSet(data.name, [s.image_path for s in ordered], labels=labels, order=order, seed=seed)


@dataclass
class Session:
    token: str
    username: str
    started: float
    results: list[tuple[float, Box]] = field(default_factory=list)  # (seconds since login, box)
    images_sent: set[int] = field(default_factory=set)
    ended: float | None = None
    ended_by: str | None = None


class Referee(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self,
        images: RefereeSet,
        time_limit: float,
        host: str = "127.0.0.1",
        port: int = 0,
        password: str | None = None,
        meter: Meter | None = None,
        request_timeout: float = REQUEST_TIMEOUT_S,
    ):
        self.images = images
        self.request_timeout = request_timeout
        self.time_limit = time_limit
        self.password = password
        self.meter = meter
        self.session: Session | None = None
        self.trace: PowerTrace | None = None
        self.finished = threading.Event()
        self.lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self.meter_error: Exception | None = None  # the meter failed to start or to stop
        super().__init__((host, port), Handler)

    def log_line(self, line: str) -> None:
        """One line on stderr per handler error (never a traceback)."""
        with contextlib.suppress(Exception):  # a closed or broken stderr must not take the server down
            print(f"referee: {line}", file=sys.stderr, flush=True)

    def handle_error(self, request, client_address) -> None:
        """socketserver's last resort (it would print a traceback): one line instead."""
        exc = sys.exc_info()[1]
        self.log_line(f"{client_address[0]}: {type(exc).__name__}: {exc}")

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def login(self, username: str, password: str) -> str | None:
        if self.password is not None and password != self.password:
            return None
        with self.lock:
            if self.session is None and self.meter_error is None:
                if self.meter is not None:
                    try:
                        self.meter.start()  # before the session exists: a failed start leaves no session
                    except Exception as exc:
                        self.meter_error = exc
                        self.finished.set()
                        return None
                self.session = Session(secrets.token_urlsafe(16), username, time.monotonic())
                self._timer = threading.Timer(self.time_limit, self.finish, args=("time limit",))
                self._timer.daemon = True
                self._timer.start()
            if self.session is None or self.session.ended is not None:
                return None
            return self.session.token

    def over(self) -> bool:
        """Once the session has ended or passed its time limit every request gets 401."""
        session = self.session
        if session is None:
            return False
        if session.ended is None and time.monotonic() - session.started > self.time_limit:
            self.finish("time limit")
        return session.ended is not None

    def active(self, token: str | None) -> Session | None:
        """The session if the token is its and the time limit has not passed."""
        session = self.session
        if session is None or session.ended is not None or token != session.token:
            return None
        if time.monotonic() - session.started > self.time_limit:
            self.finish("time limit")
            return None
        return session

    def finish(self, reason: str) -> None:
        """End the session (once); `finished` is set even when the meter fails while stopping."""
        try:
            with self.lock:
                session = self.session
                if session is None or session.ended is not None:
                    return
                session.ended = time.monotonic()
                session.ended_by = reason
                if self._timer is not None:
                    self._timer.cancel()
                if self.meter is not None:
                    try:
                        self.trace = self.meter.stop()
                    except Exception as exc:  # reported by the CLI once the session is saved
                        self.meter_error = exc
        finally:
            self.finished.set()

    def store(self, session: Session, boxes: list[Box]) -> bool:
        """Keep the boxes if the session is still open and within its time limit; False otherwise."""
        with self.lock:
            elapsed = time.monotonic() - session.started
            if session.ended is None and elapsed <= self.time_limit:
                session.results.extend((elapsed, box) for box in boxes)
                return True
        self.finish("time limit")  # a no-op when the session has already ended
        return False

    def snapshot(self) -> tuple[list[tuple[float, Box]], set[int]]:
        """The received results and the images sent, copied under the lock."""
        with self.lock:
            if self.session is None:
                return [], set()
            return list(self.session.results), set(self.session.images_sent)

    def score(self, results: list[tuple[float, Box]], images_sent: set[int]) -> dict:
        """The session's figures from a snapshot of its results: mAP (or accuracy), energy and their ratio."""
        session = self.session
        received = [box for _, box in results]
        summary: dict = {
            "dataset": self.images.name,
            "images": len(self.images.images),
            "images_sent": len(images_sent),
            "images_answered": len({b.image for b in received}),
            "results": len(received),
            "time_limit_s": self.time_limit,
            "seconds": (session.ended - session.started) if session and session.ended else None,
            "ended_by": session.ended_by if session else None,
            "order_seed": self.images.seed,
        }
        if self.images.boxes is not None:
            result = mean_average_precision(received, self.images.boxes)
            summary["metric"] = "map"
            summary["map"] = result.as_dict()
            accuracy = result.map
        else:
            labels = self.images.labels or []
            correct = answers_correct(received, labels)
            summary["metric"] = "accuracy"
            accuracy = correct / len(labels) if labels else 0.0  # unanswered images count as wrong
            summary["accuracy"] = {"value": accuracy, "correct": correct, "n": len(labels)}
        summary["energy"] = energy_figures(self.trace)
        wh = summary["energy"]["wh"] if summary["energy"] else None
        summary["score"] = {
            "value": accuracy / wh if wh and wh > 0 else None,
            "unit": f"{summary['metric']} per Wh",
            "source": summary["energy"]["source"] if summary["energy"] else None,
        }
        return summary


def answers_correct(boxes: list[Box], labels: list[int]) -> int:
    """Images (1-based, labels[n - 1]) whose most confident posted class is their label."""
    best: dict[int, Box] = {}
    for box in boxes:
        if box.image not in best or box.confidence > best[box.image].confidence:
            best[box.image] = box
    return sum(1 for n, label in enumerate(labels, 1) if n in best and best[n].label == label)


def energy_figures(trace: PowerTrace | None) -> dict | None:
    if trace is None or len(trace) < 2:
        return None
    joules = trace.energy_j()
    return {"source": trace.source, "meter": trace.meter, "joules": joules, "wh": joules / JOULES_PER_WH}


def check_bind(host: str, allow_remote: bool, password: str | None) -> None:
    """Loopback only, unless the user asked for more and set a password."""
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        raise UserError(f"{setting('host')} {host!r} is not an IP address; give e.g. 127.0.0.1 or 0.0.0.0") from None
    if loopback:
        return
    if not allow_remote:
        raise UserError(
            f"refusing to serve images on {host}: "
            f"add {setting('allow_remote')} and {setting('password')} to bind it elsewhere"
        )
    if not password:
        raise UserError(f"a referee reachable from other hosts needs {setting('password')}")


def save_session(referee: Referee, results_root: Path, started_iso: str) -> dict:
    """The scored session as a run folder: summary.json, manifest.json, results.csv (LPIRC's 7 columns)
    with received.parquet (when each result came), power.parquet when a meter ran."""
    from harness.eval.detection import write_boxes
    from harness.results.provenance import harness_source, host_machine
    from harness.results.store import id_part, new_run_id, run_folder

    results, images_sent = referee.snapshot()
    summary = referee.score(results, images_sent)
    run_id = new_run_id("referee", id_part(referee.images.name))  # a folder's name is no id: made into one
    summary = {"run_id": run_id, "kind": "referee", **summary}
    session = referee.session
    manifest = {
        "run_id": run_id,
        "kind": "referee",
        "harness": harness_source(),
        "started": started_iso,
        "dataset": referee.images.name,
        "images": [str(p) for p in referee.images.images],
        "order_seed": referee.images.seed,
        "time_limit_s": referee.time_limit,
        "username": session.username if session else None,
        "meter": referee.trace.meter if referee.trace is not None else None,
        "host": host_machine(),
    }
    with run_folder(results_root, run_id) as folder:
        write_boxes(folder.path / "results.csv", [box for _, box in results])
        folder.write_table(
            "received.parquet",
            {"seconds": [t for t, _ in results], "image": [box.image for _, box in results]},
        )
        if referee.images.boxes is not None:
            write_boxes(folder.path / "truth.csv", referee.images.boxes)
        else:
            folder.write_json("labels.json", referee.images.labels or [])
        if referee.trace is not None and len(referee.trace) and session:
            power = referee.trace.columns()
            power["t"] = [t - session.started for t in power["t"]]  # seconds since login
            folder.write_table("power.parquet", power)
        folder.write_json("manifest.json", manifest)
        folder.write_json("summary.json", summary)
    summary["run_dir"] = str(results_root / run_id)
    return summary
