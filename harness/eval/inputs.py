"""Input tensors for a run: decoded and preprocessed once, on every core, then cached on disk.

The cache is keyed by the label file, the samples (and each file's size and modification time),
the preparation (the card's preprocessing and the model's input tensor), so a second eval of the
same subset decodes no image or clip at all, and a file replaced under the same name is decoded
again. Files are decoded a block at a time and each block goes to the cache as it is done
(harness/eval/input_cache.py): nothing holds every tensor in memory, on the first run or later.
"""

import hashlib
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
from PIL.Image import DecompressionBombError

from harness.errors import UserError, setting
from harness.eval.input_cache import EntryWriter, StoredTensors, open_entry
from harness.eval.preprocess import image_tensor
from harness.model.card import Preprocessing
from harness.samples import Dataset, Preparation, Sample
from harness.tensors import TensorSpec, affine_quantize

CHUNK = 32  # files per job: small enough to keep both threads busy to the end
BLOCK = 8 * CHUNK  # files decoded before their tensors go to the cache: the most held in memory at once


@dataclass
class Inputs:
    samples: list[Sample]  # the readable ones, in order
    tensors: StoredTensors  # tensors[i]: sample i's input tensor, read from the cache when asked for
    unreadable: list[tuple[str, str]] = field(default_factory=list)  # (sample id, why)
    from_cache: bool = False
    key: str = ""  # the cache key: changes with the label file, any file's size or mtime, or the preparation


def image_preparation(pre: Preprocessing, spec: TensorSpec) -> Preparation:
    def tensor_of(sample: Sample) -> np.ndarray:
        return image_tensor(sample.image_path, pre, spec)

    return Preparation(f"{pre}|{spec}", spec, tensor_of)


def sample_preparation(card, computation, model) -> Preparation:
    """How the run makes each sample's input tensor: the card's task's preparation for what the device computes
    with, and for a float input the model quantizes on entry, each value as the model's QUANTIZE sees it (eval,
    perf, profile and layer traces give the same tensor for the same sample)."""
    from harness.eval.tasks import task_for

    preparation = task_for(card).preparation(computation.input)
    if computation.kind == "model" and model.input_quantized_as is not None:
        preparation = as_the_model_quantizes(preparation, model.input_quantized_as)
    return preparation


def as_the_model_quantizes(preparation: Preparation, quantized: TensorSpec) -> Preparation:
    """For a float input the model quantizes on entry (TfliteModel.input_quantized_as): each value as the
    integer the model's QUANTIZE makes of it, dequantized, (q - zero point) x scale. The model computes
    the very same from it, bit for bit, and where the scale is 1 the values are whole numbers that the
    cache stores as bytes (the default model's raw 0..255 pixels: a quarter of float32)."""
    spec = preparation.spec
    scale, zero_point = np.float32(quantized.scale), np.float32(quantized.zero_point)

    def tensor_of(sample: Sample) -> np.ndarray:
        q = affine_quantize(preparation.tensor_of(sample), quantized)
        return ((q.astype(np.float32) - zero_point) * scale).astype(spec.numpy_dtype)

    return Preparation(f"{preparation.key}|as quantized on entry to {quantized.describe()}", spec, tensor_of)


def _prepare_into(out: np.ndarray, samples: list[Sample], first: int, preparation: Preparation) -> dict[int, str]:
    """Writes samples first.. into `out` in place; returns {index: why} for those that cannot be read."""
    unreadable = {}
    for offset, sample in enumerate(samples):
        try:
            out[first + offset] = preparation.tensor_of(sample)
        except UserError as exc:  # missing, not a regular file (a FIFO, a device), too large
            unreadable[first + offset] = str(exc)
        except (OSError, ValueError, SyntaxError, DecompressionBombError) as exc:  # bad, huge
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
    key = _key(dataset, samples, preparation)
    tensors = open_entry(key)
    from_cache = tensors is not None
    if tensors is None:
        tensors = _decode(samples, preparation, key)
    by_id = {s.id: s for s in samples}
    inputs = Inputs([by_id[i] for i in tensors.index.ids], tensors, tensors.index.unreadable, from_cache, key)
    if inputs.unreadable and strict:
        sample_id, why = inputs.unreadable[0]
        raise UserError(
            f"{len(inputs.unreadable)} files could not be read (first: {sample_id}: {why}); "
            f"fix the dataset, or drop {setting('strict')} to skip them"
        )
    if not inputs.samples:
        raise UserError(f"none of the {len(samples)} files could be read (first: {inputs.unreadable[0][1]})")
    return inputs


def _decode_block(pool, block: list[Sample], preparation: Preparation) -> tuple[np.ndarray, dict[int, str]]:
    """The block's tensors (filled in place: no copy to stack) and {index: why} for the files unread."""
    spec = preparation.spec
    out = np.empty((len(block), *spec.shape), spec.numpy_dtype)
    parts = pool.map(lambda i: _prepare_into(out, block[i : i + CHUNK], i, preparation), range(0, len(block), CHUNK))
    return out, {index: why for part in parts for index, why in part.items()}


def _decode(samples: list[Sample], preparation: Preparation, key: str) -> StoredTensors:
    """Every sample decoded a block at a time, each block written to a new cache entry as it is done."""
    spec = preparation.spec
    writer = EntryWriter(key, spec.numpy_dtype, spec.shape)
    readable: list[str] = []
    unreadable: list[tuple[str, str]] = []
    workers = min(os.cpu_count() or 1, max(1, BLOCK // CHUNK))
    try:
        with ThreadPoolExecutor(workers) as pool:  # the JPEG decoder and numpy release the GIL; nothing is pickled
            for first in range(0, len(samples), BLOCK):
                block = samples[first : first + BLOCK]
                tensors, failed = _decode_block(pool, block, preparation)
                keep = [i for i in range(len(block)) if i not in failed]
                writer.append(tensors[keep] if failed else tensors)
                readable += [block[i].id for i in keep]
                unreadable += [(block[i].id, why) for i, why in sorted(failed.items())]
    except BaseException:
        writer.discard()
        raise
    index = writer.finish(readable, unreadable)
    return StoredTensors(writer.folder / f"{key}.bin", index)
