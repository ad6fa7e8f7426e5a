"""State assertions: short expressions over the world after a trial and its diff.

Parsed with ``ast`` and interpreted node by node from a whitelist — never
``eval``. The language::

    refunds.count(order_id=4812) == 1          rows matching, counted
    orders[4812].status == "refunded"          a row by primary key, a field
    refunds.where(order_id=4812).amount == approx(35.0, abs=0.01)
    ledger.sum(amount) == -35.0                also min, max, avg
    diff.refunds.inserted == 1                 the diff: inserted, deleted, updated counts
    no_side_effects                            nothing outside allowed_tables changed
    answer contains "refund"                   the final answer (case-insensitive, commas ignored)

Comparisons ``== != < <= > >=``, ``and``/``or``/``not``, numbers, strings,
``True``/``False``/``None``. A failed comparison reports expected vs actual.
"""

from __future__ import annotations

import ast
import io
import operator
import re
import sqlite3
import tokenize
from collections.abc import Callable
from typing import Any

from recorder import ReplayError

from ..worlds import StateDiff
from ._values import Approx, Check, Context, WorldRef, _DiffRoot, _DiffTable, _Rows, _Table
from ._world_view import WorldView


class AssertionSyntaxError(ReplayError, ValueError):
    """A state assertion is not a valid expression; the message points at the column.

    Attributes:
        source: The assertion as written.
        column: 0-based column of the problem.
    """

    def __init__(self, message: str, *, source: str, column: int) -> None:
        self.source = source
        self.column = max(0, min(column, len(source)))
        super().__init__(f"{message} at column {self.column + 1} of {source!r}")

    def caret(self) -> str:
        """Return the assertion and a caret under the column, on two lines."""
        return f"{self.source}\n{' ' * self.column}^"


_COMPARE: dict[type, tuple[str, Callable[[Any, Any], bool]]] = {
    ast.Eq: ("==", operator.eq),
    ast.NotEq: ("!=", operator.ne),
    ast.Lt: ("<", operator.lt),
    ast.LtE: ("<=", operator.le),
    ast.Gt: (">", operator.gt),
    ast.GtE: (">=", operator.ge),
}
_AGGREGATES: dict[str, Callable[[list[Any]], Any]] = {
    "sum": sum,
    "min": min,
    "max": max,
    "avg": lambda v: sum(v) / len(v),
}


MAX_LENGTH = 100_000
"""Characters an assertion may have (1,000 terms fit in half of it)."""
MAX_DEPTH = 100
"""Levels an assertion may nest (``not``, unary minus, attributes, brackets...)."""


class _Failed(Exception):
    """An assertion that cannot be evaluated on this world (a check failure, not a syntax error)."""


class Assertion:
    """A parsed state assertion; parse once, check against many trials.

    Raises:
        AssertionSyntaxError: On parse, for anything outside the language.
    """

    def __init__(self, source: str) -> None:
        self.source = source.strip()
        if len(self.source) > MAX_LENGTH:
            raise AssertionSyntaxError(
                f"longer than {MAX_LENGTH:,} characters; split it into several assertions",
                source=self.source[:60] + "...",
                column=60,
            )
        try:
            self._tree = ast.parse(_rewrite_contains(self.source), mode="eval").body
        except (RecursionError, MemoryError):  # the parser's own stack limits
            raise AssertionSyntaxError(
                f"nested more than {MAX_DEPTH} deep", source=self.source[:60], column=0
            ) from None
        except SyntaxError as exc:
            raise AssertionSyntaxError(
                exc.msg, source=self.source, column=(exc.offset or 1) - 1
            ) from None
        except tokenize.TokenError as exc:
            where = exc.args[1] if len(exc.args) > 1 else (1, 0)
            raise AssertionSyntaxError(
                str(exc.args[0]), source=self.source, column=where[1]
            ) from None
        self._segments: dict[int, str] = {}
        """Each expression node's source text, found once (per node per trial was quadratic).
        The rewrite of ``contains`` keeps every column, so offsets into it are offsets
        into the source; ``ast`` counts columns in UTF-8 bytes."""
        self._validate(self._tree)

    def __repr__(self) -> str:
        return f"Assertion({self.source!r})"

    def _reject(self, node: ast.AST, what: str) -> AssertionSyntaxError:
        offset = getattr(node, "col_offset", 0)  # in UTF-8 bytes
        column = len(self.source.encode()[:offset].decode("utf-8", "ignore"))
        return AssertionSyntaxError(what, source=self.source, column=column)

    def _validate(self, node: ast.AST) -> None:
        allowed = (
            ast.Compare,
            ast.BoolOp,
            ast.UnaryOp,
            ast.Call,
            ast.Attribute,
            ast.Subscript,
            ast.Name,
            ast.Constant,
            ast.Tuple,
            ast.keyword,
            ast.Load,
            ast.And,
            ast.Or,
            ast.Not,
            ast.USub,
            ast.UAdd,
            ast.In,  # only from `contains`: a written `in` is refused before parsing
            *_COMPARE,
        )
        # One pass, no recursion: depth, whitelist and each node's source text (_segments).
        encoded = self.source.encode()
        starts = [0] + [m.end() for m in re.finditer(b"\n", encoded)]
        stack: list[tuple[ast.AST, int]] = [(node, 0)]
        while stack:
            child, level = stack.pop()
            if level > MAX_DEPTH:
                raise self._reject(child, f"nested more than {MAX_DEPTH} deep")
            stack.extend((sub, level + 1) for sub in ast.iter_child_nodes(child))
            if isinstance(child, ast.expr) and child.end_col_offset is not None:
                begin = starts[child.lineno - 1] + child.col_offset
                end = starts[(child.end_lineno or child.lineno) - 1] + child.end_col_offset
                self._segments[id(child)] = encoded[begin:end].decode("utf-8", "replace")
            if not isinstance(child, allowed):
                raise self._reject(child, f"{type(child).__name__} is not allowed in an assertion")
            if isinstance(child, ast.Compare) and len(child.ops) != 1:
                raise self._reject(child, "compare one pair at a time (use `and`)")
            if isinstance(child, ast.Call) and not isinstance(
                child.func, (ast.Attribute, ast.Name)
            ):
                raise self._reject(child, "only table methods and approx() can be called")

    def world_refs(self) -> list[WorldRef]:
        """The tables, columns and key lookups the assertion names, in order, once each.

        What can be known from the text alone: a name is a table unless it is
        ``answer``, ``diff`` or ``no_side_effects``; ``diff.T.inserted`` names
        table ``T``; filters, aggregated columns and fields read off rows name
        columns. Which rows match, or what a field holds, needs the world.
        """
        found: list[WorldRef] = []
        self._refs(self._tree, found)
        return list(dict.fromkeys(found))

    def _refs(self, node: ast.expr, found: list[WorldRef]) -> Any:
        """Collect ``node``'s references; return what it denotes, if a table-like thing.

        That is a table, rows of one, ``diff`` or a diff table; else None.
        """
        if isinstance(node, ast.Name):
            if node.id in ("answer", "no_side_effects"):
                return None
            if node.id == "diff":
                return _DiffRoot()
            found.append(WorldRef(node.id))
            return _Table(node.id)
        if isinstance(node, ast.Subscript):
            base = self._refs(node.value, found)
            self._refs(node.slice, found)
            if not isinstance(base, _Table):
                return None
            parts = len(node.slice.elts) if isinstance(node.slice, ast.Tuple) else 1
            found.append(WorldRef(base.name, key_parts=parts))
            return _Rows(base.name)
        if isinstance(node, ast.Attribute):
            base = self._refs(node.value, found)
            if isinstance(base, _DiffRoot):
                found.append(WorldRef(node.attr))
                return _DiffTable(node.attr)
            if isinstance(base, _Rows):
                found.append(WorldRef(base.table, node.attr))
            return None
        if isinstance(node, ast.Call):
            return self._call_refs(node, found)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self._refs(child, found)
        return None

    def _call_refs(self, node: ast.Call, found: list[WorldRef]) -> Any:
        base = self._refs(node.func.value, found) if isinstance(node.func, ast.Attribute) else None
        for keyword in node.keywords:
            self._refs(keyword.value, found)
        if isinstance(node.func, ast.Attribute) and isinstance(base, (_Table, _Rows)):
            table = base.name if isinstance(base, _Table) else base.table
            method = node.func.attr
            if method in ("count", "where"):
                found.extend(WorldRef(table, k.arg, filter=True) for k in node.keywords if k.arg)
                return _Rows(table) if method == "where" else None
            if method in _AGGREGATES and len(node.args) == 1 and isinstance(node.args[0], ast.Name):
                found.append(WorldRef(table, node.args[0].id))
                return None
        for arg in node.args:
            self._refs(arg, found)
        return None

    def validate(self, world: WorldView) -> None:
        """Evaluate once against a world to reject what parses but means nothing.

        ``orders.status`` (a table, not a row) or ``refunds.delete()`` only show
        as meaningless when evaluated; checked against the fixture when a case
        loads, they fail there instead of in every trial.

        Raises:
            AssertionSyntaxError: The assertion cannot mean anything.
        """
        try:
            self._check(self._tree, Context(world, StateDiff(), "", frozenset()))
        except AssertionSyntaxError:
            raise
        except Exception:  # a world that lacks something is for the trials to report
            return

    def check(self, ctx: Context) -> Check:
        """Evaluate against a trial; never raises for a world that lacks something."""
        try:
            return self._check(self._tree, ctx)
        except _Failed as exc:
            return Check(self.source, False, message=str(exc))
        except LookupError as exc:
            return Check(self.source, False, message=str(exc.args[0] if exc.args else exc))
        except (TypeError, ValueError, ArithmeticError, sqlite3.Error) as exc:
            # Includes AssertionSyntaxError for what only the world can reveal as meaningless.
            return Check(self.source, False, message=f"cannot evaluate: {exc}")

    def _segment(self, node: ast.expr) -> str:
        return self._segments.get(id(node)) or self.source

    def _check(self, node: ast.expr, ctx: Context) -> Check:
        source = self.source if node is self._tree else self._segment(node)
        if isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.In):
            text, needle = self._value(node.left, ctx), self._value(node.comparators[0], ctx)
            if not isinstance(needle, str) or not isinstance(text, (str, type(None))):
                raise _Failed('contains compares text: `answer contains "refund"`')
            # Case-insensitive; commas ignored (1,234 contains 1234), as tau2-bench compares.
            passed = _plain(needle) in _plain(text or "")
            return Check(source, passed, f"contains {needle!r}", repr(text))
        if isinstance(node, ast.Compare):
            symbol, compare = _COMPARE[type(node.ops[0])]
            actual = self._value(node.left, ctx)
            expected = self._value(node.comparators[0], ctx)
            if isinstance(actual, Approx) and not isinstance(expected, Approx):
                actual, expected = expected, actual  # approx(...) == x: x is what was found
            try:
                passed = bool(compare(actual, expected))
            except TypeError:
                passed = False
            shown = repr(expected) if symbol == "==" else f"{symbol} {expected!r}"
            return Check(source, passed, shown, repr(actual))
        if isinstance(node, ast.BoolOp):
            parts = [self._check(v, ctx) for v in node.values]
            failed = [p for p in parts if not p.passed]
            if isinstance(node.op, ast.And):
                if not failed:
                    return Check(source, True)
                first = failed[0]
                detail = first.message or f"expected {first.expected}, actual {first.actual}"
                return Check(
                    source, False, first.expected, first.actual, f"{first.source}: {detail}"
                )
            if len(failed) < len(parts):
                return Check(source, True)
            reasons = "; ".join(f"{p.source}: {p.message or f'actual {p.actual}'}" for p in failed)
            return Check(source, False, message=f"none held ({reasons})")
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            inner = self._check(node.operand, ctx)
            return Check(source, not inner.passed, f"not {inner.expected or 'true'}", inner.actual)
        if isinstance(node, ast.Name) and node.id == "no_side_effects":
            if ctx.allowed_tables is None:
                raise _Failed("no_side_effects needs the case's allowed_tables")
            outside = sorted(ctx.diff.touched() - ctx.allowed_tables)
            if outside:
                allowed = ", ".join(sorted(ctx.allowed_tables)) or "none"
                return Check(
                    source, False, message=f"changed {', '.join(outside)} (allowed: {allowed})"
                )
            return Check(source, True)
        value = self._value(node, ctx)
        return Check(source, bool(value), "true", repr(value))

    def _value(self, node: ast.expr, ctx: Context) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.BoolOp, ast.Compare)) or (
            isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)
        ):
            return self._check(node, ctx).passed
        if isinstance(node, ast.UnaryOp):
            operand = self._value(node.operand, ctx)
            if not isinstance(operand, (int, float)):
                raise _Failed(f"cannot negate {operand!r}")
            return -operand if isinstance(node.op, ast.USub) else operand
        if isinstance(node, ast.Tuple):
            return tuple(self._value(e, ctx) for e in node.elts)
        if isinstance(node, ast.Name):
            return self._name(node, ctx)
        if isinstance(node, ast.Subscript):
            base = self._value(node.value, ctx)
            if not isinstance(base, _Table):
                raise self._reject(node, "only a table can be indexed (by primary key)")
            key = self._value(node.slice, ctx)
            row = ctx.world.get(base.name, key)
            if row is None:
                raise _Failed(f"{base.name}[{key!r}] does not exist")
            return _Rows(base.name, [row])
        if isinstance(node, ast.Attribute):
            return self._attribute(node, self._value(node.value, ctx), ctx)
        if isinstance(node, ast.Call):
            return self._call(node, ctx)
        raise self._reject(node, f"{type(node).__name__} is not allowed in an assertion")

    def _name(self, node: ast.Name, ctx: Context) -> Any:
        if node.id == "answer":
            return ctx.answer or ""
        if node.id == "diff":
            return _DiffRoot()
        if node.id == "no_side_effects":
            return self._check(node, ctx).passed
        return _Table(node.id)

    def _attribute(self, node: ast.Attribute, base: Any, ctx: Context) -> Any:
        if isinstance(base, _DiffRoot):
            return _DiffTable(node.attr)
        if isinstance(base, _DiffTable):
            if node.attr not in ("inserted", "deleted", "updated"):
                raise self._reject(node, "use diff.<table>.inserted, .deleted or .updated")
            return len(getattr(ctx.diff.table(base.name), node.attr))
        if isinstance(base, _Rows):
            if not base.rows:
                raise _Failed(f"{base.table}: no row matched, so there is no .{node.attr}")
            if len(base.rows) > 1:
                raise _Failed(
                    f"{base.table}: {len(base.rows)} rows matched, so .{node.attr} is ambiguous"
                )
            row = base.rows[0]
            if node.attr not in row:
                raise _Failed(f"{base.table} has no column {node.attr!r}")
            return row[node.attr]
        raise self._reject(node, f"unknown attribute .{node.attr}")

    def _call(self, node: ast.Call, ctx: Context) -> Any:
        kwargs = {k.arg: self._value(k.value, ctx) for k in node.keywords if k.arg is not None}
        if isinstance(node.func, ast.Name):
            if node.func.id != "approx" or len(node.args) != 1:
                raise self._reject(node, "only approx(value, abs=..., rel=...) can be called")
            value = self._value(node.args[0], ctx)
            unknown = set(kwargs) - {"abs", "rel"}
            if unknown or not isinstance(value, (int, float)):
                raise self._reject(node, "approx takes a number and abs= or rel=")
            return Approx(float(value), **kwargs)
        assert isinstance(node.func, ast.Attribute)
        method = node.func.attr
        base = self._value(node.func.value, ctx)
        if isinstance(base, _DiffTable):
            raise self._reject(node, "diff counts are attributes: diff.<table>.inserted")
        if not isinstance(base, (_Table, _Rows)):
            raise self._reject(node.func, f"{method}() applies to a table")
        table = base.name if isinstance(base, _Table) else base.table
        if method in ("count", "where"):
            if node.args:
                raise self._reject(node, f"{method}() takes column=value filters")
            rows = (
                ctx.world.rows(table, kwargs)
                if isinstance(base, _Table)
                else [r for r in base.rows if all(r.get(k) == v for k, v in kwargs.items())]
            )
            return len(rows) if method == "count" else _Rows(table, rows)
        if method in _AGGREGATES:
            if len(node.args) != 1 or not isinstance(node.args[0], ast.Name) or kwargs:
                raise self._reject(node, f"{method}() takes one column name, e.g. {method}(amount)")
            column = node.args[0].id
            rows = ctx.world.rows(table, {}) if isinstance(base, _Table) else base.rows
            values = [r.get(column) for r in rows if r.get(column) is not None]
            if rows and column not in rows[0]:
                raise _Failed(f"{table} has no column {column!r}")
            return _AGGREGATES[method](values) if values else None
        raise self._reject(
            node.func, f"unknown method {method}(); use count, where, sum, min, max, avg"
        )


def _plain(text: str) -> str:
    return text.lower().replace(",", "")


def _rewrite_contains(source: str) -> str:
    """Turn each ``contains`` keyword into ``in`` (padded: columns stay where they were).

    ``in`` has comparison precedence, so ``not answer contains "x"`` and
    ``a and answer contains "x"`` group as a reader expects; the evaluator
    reads ``A in B`` as "A contains B". A written ``in`` is refused (it would
    read backwards).
    """
    if "in" not in source:  # neither `in` nor `contains`: nothing to tokenize
        return source
    out = list(source)
    offsets = [0]
    for line in io.StringIO(source):  # the lines tokenize reads
        offsets.append(offsets[-1] + len(line))
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type != tokenize.NAME:
            continue
        if token.string == "in":
            raise AssertionSyntaxError(
                "write `A contains B` instead of `B in A`", source=source, column=token.start[1]
            )
        if token.string == "contains":
            at = offsets[token.start[0] - 1] + token.start[1]
            out[at : at + len("contains")] = "in      "
    return "".join(out)
