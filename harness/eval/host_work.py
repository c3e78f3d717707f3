"""Host references off the link's path: a thread runs them ahead of the board, in the order the board takes
the samples, at most AHEAD samples ahead of the results taken.

Both host interpreters (TFLM's and LiteRT's) release the GIL while they invoke, so the thread computes
while the board's session thread sends, waits and reads. The results are the same bytes as computed
inline: the same references on the same tensors, one sample at a time.
"""

import threading
from collections.abc import Sequence

import numpy as np

from harness.model.dut import DutComputation

AHEAD = 32  # samples computed and not yet taken: bounds the memory the results hold


class HostReferences:
    """`with HostReferences(...) as host:` then `host.outputs(index)` for each arrived sample."""

    def __init__(self, references: list, computation: DutComputation, tensors: Sequence[np.ndarray], order: list[int]):
        self._references, self._computation, self._tensors = references, computation, tensors
        self._order = order
        self._results: dict[int, dict[str, bytes]] = {}
        self._taken: set[int] = set()  # computed by the caller itself (see outputs)
        self._changed = threading.Condition()
        self._invoking = threading.Lock()  # one interpreter call at a time: the interpreters are not shared
        self._stopped = False
        self._full = False  # the thread waits for a result to be taken
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="host references", daemon=True)

    def __enter__(self) -> "HostReferences":
        if self._references:
            self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        with self._changed:
            self._stopped = True
            self._changed.notify_all()
        if self._thread.is_alive():
            self._thread.join()

    def _compute(self, index: int) -> dict[str, bytes]:
        tensor = self._tensors[index]
        with self._invoking:
            return {ref.name: self._computation.result(ref.run, tensor) for ref in self._references}

    def _run(self) -> None:
        try:
            for index in self._order:
                with self._changed:
                    while len(self._results) >= AHEAD and not self._stopped:
                        self._full = True
                        self._changed.wait()
                    self._full = False
                    if self._stopped:
                        return
                    if index in self._taken:
                        continue
                outputs = self._compute(index)
                with self._changed:
                    if index not in self._taken:
                        self._results[index] = outputs
                    self._changed.notify_all()
        except BaseException as exc:  # given to the caller at its next outputs()
            with self._changed:
                self._failure = exc
                self._changed.notify_all()

    def outputs(self, index: int) -> dict[str, bytes]:
        """Each reference's output for sample `index`: computed ahead, or now when the thread cannot get
        to it (its results are full of samples that arrive later: a sharded run's board gave some back)."""
        if not self._references:
            return {}
        with self._changed:
            while index not in self._results:
                if self._failure is not None:
                    raise self._failure
                if (self._full and len(self._results) >= AHEAD) or not self._thread.is_alive():
                    self._taken.add(index)
                    break
                self._changed.wait()
            else:
                outputs = self._results.pop(index)
                self._full = False  # room again: the thread goes on
                self._changed.notify_all()
                return outputs
        return self._compute(index)
