"""Input tensors for a run: decoded and preprocessed once, on every core, then cached on disk.

The cache is keyed by the label file, the samples (and each file's size and modification time),
the preparation (the card's preprocessing and the model's input tensor), so a second eval of the
same subset decodes no image or clip at all, and a file replaced under the same name is decoded
again.
"""

import hashlib
import json
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
from PIL.Image import DecompressionBombError

from harness.errors import UserError, setting
from harness.eval.preprocess import image_tensor
from harness.model.card import Preprocessing
from harness.paths import cache_dir
from harness.samples import Dataset, Preparation, Sample
from harness.tensors import TensorSpec

CHUNK = 32  # files per job: small enough to keep both threads busy to the end


@dataclass
class Inputs:
    samples: list[Sample]  # the readable ones, in order
    tensors: np.ndarray  # one input tensor per sample, stacked
    unreadable: list[tuple[str, str]] = field(default_factory=list)  # (sample id, why)
    from_cache: bool = False
    key: str = ""  # the cache key: changes with the label file, any file's size or mtime, or the preparation


def image_preparation(pre: Preprocessing, spec: TensorSpec) -> Preparation:
    def tensor_of(sample: Sample) -> np.ndarray:
        return image_tensor(sample.image_path, pre, spec)

    return Preparation(f"{pre}|{spec}", spec, tensor_of)


def _prepare_into(out: np.ndarray, samples: list[Sample], first: int, preparation: Preparation) -> dict[int, str]:
    """Writes samples first.. into `out` in place; returns {index: why} for those that cannot be read."""
    unreadable = {}
    for offset, sample in enumerate(samples):
        try:
            out[first + offset] = preparation.tensor_of(sample)
        except (OSError, ValueError, SyntaxError, DecompressionBombError) as exc:  # missing, bad, huge
            unreadable[first + offset] = f"{type(exc).__name__}: {exc}"
    return unreadable


def _key(dataset: Dataset, samples: list[Sample], preparation: Preparation) -> str:
    digest = hashlib.sha256(f"{dataset.csv_sha256}|{preparation.key}".encode())
    for sample in samples:
        try:
            stat = os.stat(sample.image_path)
            version = f"{stat.st_size}:{stat.st_mtime_ns}"
        except OSError:
            version = "absent"
        digest.update(f"{sample.id}|{version}\n".encode())
    return digest.hexdigest()[:24]


def prepare_inputs(dataset: Dataset, samples: list[Sample], preparation: Preparation, strict: bool = False) -> Inputs:
    folder = cache_dir() / "tensors"
    key = _key(dataset, samples, preparation)
    index, tensors_path = folder / f"{key}.json", folder / f"{key}.npy"
    by_id = {s.id: s for s in samples}
    if index.is_file() and tensors_path.is_file():
        entry = json.loads(index.read_text())
        tensors = np.load(tensors_path, mmap_mode="r")  # read lazily, as the run streams
        inputs = Inputs([by_id[i] for i in entry["ids"]], tensors, [tuple(u) for u in entry["unreadable"]], True)
    else:
        inputs = _decode(samples, preparation)
        folder.mkdir(parents=True, exist_ok=True)
        partial = folder / f".{key}.{os.getpid()}.partial.npy"
        np.save(partial, inputs.tensors)
        partial.replace(tensors_path)  # the index last: a present index means complete tensors
        entry = {"ids": [s.id for s in inputs.samples], "unreadable": inputs.unreadable}
        partial_index = folder / f".{key}.{os.getpid()}.partial.json"
        partial_index.write_text(json.dumps(entry))
        partial_index.replace(index)
    inputs.key = key
    if inputs.unreadable and strict:
        sample_id, why = inputs.unreadable[0]
        raise UserError(
            f"{len(inputs.unreadable)} files could not be read (first: {sample_id}: {why}); "
            f"fix the dataset, or drop {setting('strict')} to skip them"
        )
    if not inputs.samples:
        raise UserError(f"none of the {len(samples)} files could be read (first: {inputs.unreadable[0][1]})")
    return inputs


def _decode(samples: list[Sample], preparation: Preparation) -> Inputs:
    spec = preparation.spec
    out = np.empty((len(samples), *spec.shape), spec.numpy_dtype)  # filled in place: no copy to stack
    starts = range(0, len(samples), CHUNK)
    workers = min(os.cpu_count() or 1, len(starts))
    if workers > 1:  # threads: the JPEG decoder and numpy release the GIL, and nothing is pickled
        with ThreadPoolExecutor(workers) as pool:
            parts = list(pool.map(lambda i: _prepare_into(out, samples[i : i + CHUNK], i, preparation), starts))
    else:
        parts = [_prepare_into(out, samples, 0, preparation)]
    unreadable = {index: why for part in parts for index, why in part.items()}
    if unreadable:
        keep = np.array([i not in unreadable for i in range(len(samples))])
        out = out[keep]
    readable = [sample for i, sample in enumerate(samples) if i not in unreadable]
    return Inputs(readable, out, [(samples[i].id, why) for i, why in sorted(unreadable.items())])
