"""JSON-document worlds: collections of records keyed by id, held in the world's SQLite.

Many agents (and tau2-bench's domains) keep their state as Python objects:
collections of records keyed by id. A JSON fixture may hold such
collections — ``{"users": {"mia_li_3668": {...}}, "reservations": {...}}`` —
and each becomes a table: ``id`` (the key) and one column per top-level
field, nested values stored as JSON text (declared ``JSON TEXT``), booleans
declared ``BOOLEAN``, other values stored as they are (an integer stays an
integer, a float a float).

So a document world *is* a SQLite world: it resets by rollback, every tool
call's delta is captured by the same triggers (changed fields only), it
gives the same ``StateDiff``, and assertions read it the same way
(``users["mia_li_3668"].membership``, ``reservations.count(user_id=...)``).
One engine, two faces: ``Documents`` is the Python face tools use.

``Documents(conn, models)`` gives ``docs.users["mia_li_3668"]``: the record
loaded from its row (a dict, or a pydantic model when ``models`` names one
for the collection). Tools change the objects they got in the same call in
place, add (``docs.users[k] = obj``) or delete records; ``flush()`` — after
every tool call — writes back the fields that changed. A record's fields
missing from its row read as None.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any

from pydantic import BaseModel

from ._models import MODELS

KEY = "id"
JSON_TYPE = "JSON TEXT"
"""Declared type of a column holding nested values (TEXT affinity: stored as written)."""
BOOL_TYPE = "BOOLEAN"
_STORED = json.JSONEncoder(sort_keys=True, default=str, separators=(",", ":")).encode
"""``json.dumps(value, sort_keys=True, default=str, separators=(",", ":"))``, its encoder
made once: ``json.dumps`` with options makes one a call (a third of a field's cost)."""
_CANONICAL = json.JSONEncoder(sort_keys=True, default=str).encode


def is_documents(spec: Any) -> bool:
    """Whether a JSON fixture's table spec is a collection of records keyed by id."""
    if not isinstance(spec, Mapping) or not spec:
        return False
    if isinstance(spec.get("rows"), list):
        return False  # {"pk": ..., "rows": [...]}: a table of rows
    return all(isinstance(record, Mapping) for record in spec.values())


def _kind(values: list[Any]) -> str:
    present = [v for v in values if v is not None]
    if not present or any(isinstance(v, (dict, list)) for v in present):
        return JSON_TYPE  # nested, or unknown yet (always None): JSON holds any value exactly
    if present and all(isinstance(v, bool) for v in present):
        return BOOL_TYPE
    return ""  # no affinity: values kept as they are


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def encode(kind: str, value: Any) -> Any:
    """A field's value as stored in its column."""
    if value is None:
        return None
    if kind == JSON_TYPE:
        return _STORED(value)
    if isinstance(value, (dict, list)):
        raise ValueError(
            f"a nested value in a column that held only scalars in the fixture: {value!r}"
        )
    return value


def _same(a: Any, b: Any) -> bool:
    """Equal as stored: 1 and 1.0, or True and 1, are different values here."""
    return a is b or _CANONICAL(a) == _CANONICAL(b)


def decode(kind: str, value: Any) -> Any:
    """A column's stored value as the field's value."""
    if value is None:
        return None
    if kind == JSON_TYPE and isinstance(value, str):
        return json.loads(value)
    if kind == BOOL_TYPE:
        return bool(value)
    return value


def load_collection(conn: sqlite3.Connection, name: str, records: Mapping[str, Any]) -> None:
    """Create table ``name`` from records keyed by id.

    Raises:
        ValueError: A record's own ``id`` field differs from its key.
    """
    fields: dict[str, list[Any]] = {}
    for key, record in records.items():
        if KEY in record and str(record[KEY]) != str(key):
            raise ValueError(f"collection {name!r}: record {key!r} has id {record[KEY]!r}")
        for field, value in record.items():
            if field != KEY:
                fields.setdefault(field, []).append(value)
    kinds = {field: _kind(values) for field, values in fields.items()}
    columns = ", ".join(f"{_q(f)} {k}".rstrip() for f, k in kinds.items())
    conn.execute(
        f"CREATE TABLE {_q(name)} ({_q(KEY)} TEXT PRIMARY KEY{', ' if columns else ''}{columns})"
    )
    names = [KEY, *kinds]
    marks = ", ".join("?" for _ in names)
    conn.executemany(
        f"INSERT INTO {_q(name)} ({', '.join(map(_q, names))}) VALUES ({marks})",
        (
            (str(key), *(encode(kinds[f], record.get(f)) for f in kinds))
            for key, record in records.items()
        ),
    )


def column_kinds(conn: sqlite3.Connection, table: str) -> dict[str, str]:
    """Declared type of each column of ``table`` (``JSON TEXT``, ``BOOLEAN``, ...)."""
    return {r[1]: (r[2] or "").upper() for r in conn.execute(f"PRAGMA table_info({_q(table)})")}


def decode_row(kinds: Mapping[str, str], row: Mapping[str, Any]) -> dict[str, Any]:
    """A row with its JSON and boolean columns decoded."""
    return {k: decode(kinds.get(k, ""), v) for k, v in row.items()}


def _plain(value: Any) -> Any:
    """A record (dict or pydantic model) as plain JSON data, as stored."""
    if isinstance(value, BaseModel):  # values set without validation may not fit: keep them
        return value.model_dump(mode="json", warnings=False)  # enums, datetimes as JSON has them
    return json.loads(json.dumps(value, default=str))


def _fingerprint(record: Any) -> str:
    """A record's content as text, to tell cheaply whether a call changed it."""
    if isinstance(record, BaseModel):
        return record.model_dump_json(warnings=False)
    return _CANONICAL(record)


class _Loaded:
    """A record's fields as stored, decoded when first asked for.

    Only a flush that found the record changed asks: one only read is never decoded
    when its model is kept (``_models``).
    """

    __slots__ = ("_fields", "_kinds", "_names", "_values")

    def __init__(
        self, kinds: Mapping[str, str], names: tuple[str, ...], values: tuple[Any, ...]
    ) -> None:
        self._kinds, self._names, self._values = kinds, names, values
        self._fields: dict[str, Any] | None = None

    @classmethod
    def of(cls, fields: dict[str, Any]) -> _Loaded:
        """Fields already decoded (as a flush wrote them)."""
        loaded = cls({}, (), ())
        loaded._fields = fields
        return loaded

    def stored(self) -> tuple[Any, ...]:
        """What decoding depends on: the columns, their declared types, the stored values."""
        return self._names, tuple(self._kinds.get(n, "") for n in self._names), self._values

    def fields(self) -> dict[str, Any]:
        """The fields, decoded (without the id)."""
        if self._fields is None:
            row = decode_row(self._kinds, dict(zip(self._names, self._values, strict=True)))
            row.pop(KEY)
            self._fields = row
        return self._fields


class Collection(MutableMapping[str, Any]):
    """One collection of a ``Documents``: records by id, loaded when first read."""

    def __init__(self, docs: Documents, name: str, model: type[BaseModel] | None) -> None:
        self._docs, self.name, self._model = docs, name, model
        self._kinds = column_kinds(docs.conn, name)
        if KEY not in self._kinds:
            raise LookupError(f"table {name!r} is not a collection (it has no {KEY!r} column)")
        self._loaded: dict[str, tuple[Any, _Loaded | None]] = {}
        """key -> (the object handed out, its fields as loaded; None when added here)."""
        self._texts: dict[str, str] = {}
        """key -> the loaded fields as canonical JSON, to tell a changed record cheaply."""
        self._touched: set[str] = set()
        """Keys handed out or set since the last flush: the only records it must check."""
        self._deleted: set[str] = set()

    def _row(self, key: str) -> _Loaded | None:
        cursor = self._docs.conn.execute(
            f"SELECT * FROM {_q(self.name)} WHERE {_q(KEY)} = ?", (key,)
        )
        found = cursor.fetchone()
        if found is None:
            return None
        names = tuple(d[0] for d in cursor.description)
        return _Loaded(self._kinds, names, found)

    def __getitem__(self, key: str) -> Any:
        if key in self._deleted:
            raise KeyError(key)
        if key in self._loaded:
            self._touched.add(key)
            return self._loaded[key][0]
        row = self._row(key)
        if row is None:
            raise KeyError(key)
        obj: Any
        if self._model is not None:  # validated once per content (``_models``)
            stored = (self.name, *row.stored())
            obj, text = MODELS.load(self._model, stored, row.fields, _fingerprint)
        else:
            obj = dict(row.fields())
            text = _fingerprint(obj)
        self._loaded[key] = (obj, row)
        self._texts[key] = text
        self._touched.add(key)
        return obj

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str) or key in self._deleted:
            return False
        if key in self._loaded:
            return True
        sql = f"SELECT 1 FROM {_q(self.name)} WHERE {_q(KEY)} = ?"
        return self._docs.conn.execute(sql, (key,)).fetchone() is not None

    def __setitem__(self, key: str, value: Any) -> None:
        self._deleted.discard(key)
        self._loaded[key] = (value, self._loaded[key][1] if key in self._loaded else None)
        self._touched.add(key)

    def __delitem__(self, key: str) -> None:
        if key not in self:
            raise KeyError(key)
        self._loaded.pop(key, None)
        self._deleted.add(key)

    def __iter__(self) -> Iterator[str]:
        stored = [r[0] for r in self._docs.conn.execute(f"SELECT {_q(KEY)} FROM {_q(self.name)}")]
        seen = set(stored)
        yield from (k for k in stored if k not in self._deleted)
        yield from (k for k in self._loaded if k not in seen)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def flush(self) -> None:
        """Write back what changed since the records were loaded (or last flushed).

        Loaded records stay cached for the next calls: every write to this
        world's collections goes through here, so the cache stays true. Only
        the records handed out since the last flush are checked: a call that
        read one record does not pay for the hundreds an earlier search loaded.
        """
        conn = self._docs.conn
        touched, self._touched = self._touched, set()
        for key in touched:
            if key not in self._loaded:  # deleted since
                continue
            obj, loaded = self._loaded[key]
            text = _fingerprint(obj)
            if loaded is not None and text == self._texts.get(key):
                continue  # untouched (most records a call reads)
            fields = _plain(obj)
            if not isinstance(fields, dict):
                raise TypeError(f"{self.name}[{key!r}] is not a record: {obj!r}")
            fields.pop(KEY, None)
            for field in fields:
                if field not in self._kinds:  # a field no record had: a new column
                    kind = _kind([fields[field]])
                    conn.execute(f"ALTER TABLE {_q(self.name)} ADD COLUMN {_q(field)} {kind}")
                    self._kinds[field] = kind
            if loaded is None:
                self._insert(key, fields)
            else:
                before = loaded.fields()
                gone = {f: None for f in before.keys() - fields.keys()}  # deleted fields read None
                changed = {
                    f: v for f, v in {**fields, **gone}.items() if not _same(v, before.get(f))
                }
                if changed:
                    sets = ", ".join(f"{_q(f)} = ?" for f in changed)
                    conn.execute(
                        f"UPDATE {_q(self.name)} SET {sets} WHERE {_q(KEY)} = ?",
                        (*(encode(self._kinds[f], v) for f, v in changed.items()), key),
                    )
            self._loaded[key] = (obj, _Loaded.of(fields))
            self._texts[key] = text
        for key in self._deleted:
            conn.execute(f"DELETE FROM {_q(self.name)} WHERE {_q(KEY)} = ?", (key,))
        self._deleted.clear()

    def _insert(self, key: str, fields: Mapping[str, Any]) -> None:
        names = [KEY, *fields]
        marks = ", ".join("?" for _ in names)
        self._docs.conn.execute(
            f"INSERT OR REPLACE INTO {_q(self.name)} ({', '.join(map(_q, names))}) "
            f"VALUES ({marks})",
            (key, *(encode(self._kinds[f], v) for f, v in fields.items())),
        )


class Documents:
    """The collections of a document world, as attributes (``docs.users``).

    Args:
        conn: The world's connection.
        models: Pydantic model per collection, for records handed out as models.
    """

    def __init__(
        self, conn: sqlite3.Connection, models: Mapping[str, type[BaseModel]] | None = None
    ) -> None:
        self.conn = conn
        self._models = dict(models or {})
        self._collections: dict[str, Collection] = {}

    def __getattr__(self, name: str) -> Collection:
        if name.startswith("_"):
            raise AttributeError(name)
        return self.collection(name)

    def collection(self, name: str) -> Collection:
        """The collection ``name``."""
        if name not in self._collections:
            self._collections[name] = Collection(self, name, self._models.get(name))
        return self._collections[name]

    def flush(self) -> None:
        """Write back every collection's changes (call it at the end of each tool call)."""
        for collection in self._collections.values():
            collection.flush()

    def dump(self, names: list[str] | None = None) -> dict[str, dict[str, dict[str, Any]]]:
        """Every record of the named collections (default: all) as plain JSON data."""
        tables = names or [
            r[0]
            for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if KEY in column_kinds(self.conn, r[0])
        ]
        out: dict[str, dict[str, dict[str, Any]]] = {}
        for table in tables:
            kinds = column_kinds(self.conn, table)
            cursor = self.conn.execute(f"SELECT * FROM {_q(table)} ORDER BY rowid")
            names_ = [d[0] for d in cursor.description]
            records = out.setdefault(table, {})
            for found in cursor:
                row = decode_row(kinds, dict(zip(names_, found, strict=True)))
                records[row.pop(KEY)] = row
        return out
