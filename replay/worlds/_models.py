"""Records handed out as pydantic models, validated once per content per process.

A trial's tools read the same records from rows that every trial starts with
(the world resets by rollback): tau2's airline search reads every flight, and
validating one (a dict of dated statuses, an undiscriminated union) took 0.5 ms,
its first fingerprint 0.1 ms more, and decoding its row's JSON 0.14 ms. So the
first validation of a row's content is kept, pickled, with its fingerprint, and
later reads of the same content (in this trial or the next) unpickle a fresh copy
(0.19 ms for a flight): every read still gets its own object to change.

Decided: a model is taken to be a pure function of its row. One whose validation
is not (a ``default_factory`` reading the clock, a validator counting calls) would
see its first value again; worlds are reset to be deterministic, so this is the
contract they already keep. A model that cannot be pickled (defined inside a
function) is validated on every read, as before.
"""

from __future__ import annotations

import pickle
import threading
from collections.abc import Callable, Hashable
from typing import Any

from pydantic import BaseModel

CACHE_BYTES = 64 << 20
"""At most this much is kept, pickled models with their keys' stored rows (oldest first out)."""


class ModelCache:
    """Pickled models and their fingerprints, by (model, table, stored row)."""

    def __init__(self, limit: int = CACHE_BYTES) -> None:
        self._limit = limit
        self._size = 0
        self._kept: dict[Hashable, tuple[bytes, str, int]] = {}
        """(pickled model, fingerprint, bytes they and their key take) by key."""
        self._refused: set[type[BaseModel]] = set()
        self._lock = threading.Lock()

    def load(
        self,
        model: type[BaseModel],
        key: Hashable,
        fields: Callable[[], dict[str, Any]],
        fingerprint: Callable[[BaseModel], str],
    ) -> tuple[BaseModel, str]:
        """A fresh model of the row ``key`` stands for, and its fingerprint.

        ``fields`` decodes the row (called only when its content is not kept).
        """
        kept = self._kept.get((model, key))
        if kept is not None:
            obj: BaseModel = pickle.loads(kept[0])
            return obj, kept[1]
        obj = model.model_validate(fields())
        text = fingerprint(obj)
        if model not in self._refused:
            try:
                blob = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception:  # (pickle raises what the object's reducer raises)
                self._refused.add(model)
            else:
                self._keep((model, key), blob, text, _size(key))
        return obj, text

    def _keep(self, key: Hashable, blob: bytes, text: str, keyed: int) -> None:
        size = len(blob) + len(text) + keyed
        if size > self._limit:
            return
        with self._lock:
            if key in self._kept:
                return
            while self._kept and self._size + size > self._limit:
                oldest = next(iter(self._kept))
                self._size -= self._kept.pop(oldest)[2]
            self._kept[key] = (blob, text, size)
            self._size += size


def _size(key: object) -> int:
    """Bytes of the text and blobs in a key (a row's stored values)."""
    if isinstance(key, (str, bytes)):
        return len(key)
    if isinstance(key, tuple):
        return sum(_size(part) for part in key)
    return 8


MODELS = ModelCache()
"""The process's cache (trials in threads share it: each read gets its own object)."""
