"""Reading run folders back: one run, or every run under a results folder."""

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import pyarrow.parquet as pq

from harness.errors import UserError


@dataclass(frozen=True)
class Run:
    path: Path
    manifest: dict
    summary: dict

    @property
    def id(self) -> str:
        return self.manifest["run_id"]

    @property
    def model(self) -> str:
        return self.manifest["model"]["card"]

    @property
    def board(self) -> str:
        return self.manifest["board"]["id"]

    @property
    def primary_reference(self) -> str | None:
        return self.summary.get("primary_reference")

    @cached_property
    def samples(self) -> dict[str, list]:
        return pq.read_table(self.path / "samples.parquet").to_pydict()

    def headline(self) -> dict:
        """The figures `harness runs` lists."""
        first = next(iter(self.summary["subsets"].values()), None)
        latency = self.summary["latency"]
        return {
            "run_id": self.id,
            "model": self.model,
            "board": self.board,
            "samples": self.summary["samples"],
            "subsets": ",".join(self.summary["subsets"]),
            "device_accuracy": first["device"]["accuracy"] if first else None,
            "agreement": first["versus"][self.primary_reference]["agreement"]
            if first and self.primary_reference
            else None,
            "latency_median_us": (latency.get("micros") or {}).get("median"),
            "instructions_median": (latency.get("instructions") or {}).get("median"),
            "latency_source": latency["source"],
            "arena_used": self.summary["arena"]["used"] or None,
            "arena_source": self.summary["arena"]["source"],
            "started": self.manifest["started"],
        }


def load_run(spec: str, root: Path = Path("results")) -> Run:
    """A run by folder path or by run id under `root`."""
    path = Path(spec)
    if not (path / "manifest.json").is_file():
        path = root / spec
    try:
        manifest = json.loads((path / "manifest.json").read_text())
        summary = json.loads((path / "summary.json").read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise UserError(
            f"{spec} is not a run folder (needs manifest.json and summary.json); see `harness runs`"
        ) from exc
    if not (path / "samples.parquet").is_file():
        raise UserError(f"{spec} has no samples.parquet; it is not a complete run folder")
    return Run(path, manifest, summary)


def list_runs(root: Path) -> list[Run]:
    """The eval runs under `root` (stream runs and referee sessions keep other files)."""
    if not root.is_dir():
        return []
    runs = [
        load_run(str(p))
        for p in sorted(root.iterdir())
        if (p / "manifest.json").is_file() and (p / "samples.parquet").is_file() and not p.name.startswith(".")
    ]
    return sorted(runs, key=lambda run: run.manifest["started"])
