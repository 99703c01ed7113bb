"""Querysets built and compiled once per process, then run again with other values.

Building a queryset and compiling it to SQL can cost a request more than running it (the submit's locking read
of the assignment, with its source, its campaign and two EXISTS, for one). A :class:`PreparedQuery` calls its
builder once, with stand-in values, keeps the compiled SQL, its parameters and the compiler (which knows the
layout of the selected columns), and on each call runs the same SQL with the stand-ins' parameters replaced by
the call's values. Rows become objects through Django's own iterables, as they would for the queryset itself.

Rules for a builder:
- its keyword arguments are query values (ids, keys, slugs: integers or strings) used as filter or
  annotation values and never branched on, so the SQL's shape does not depend on them; what the shape
  does depend on (a user's role, say) is passed as ``shape`` and gets an SQL of its own;
- ``run`` returns the whole result as a list (slice in the builder; no prefetching).

A stand-in written into the SQL text (a value Django inlined) is refused when the query is prepared; one
that a shape does not use is simply not a parameter of that shape's SQL. ``select_for_update`` keeps
Django's check that a transaction is open. The package django-prepared-queries did this for Django < 2.2
and is not maintained.

On PostgreSQL the kept SQL is also a server-side prepared statement, so the database parses and plans it
once per session too: the first run on a connection sends ``PREPARE name AS ...; EXECUTE name(values)`` in
one round trip, later runs ``EXECUTE name(values)``; a run stays one statement. Planning is most of
PostgreSQL's work on such short reads. A builder's values are declared to
PostgreSQL as bigint (integers) and text (strings) (:data:`_VALUE_TYPES`), Django's own constants are
typed from where they are used. A run with an integer past 64 bits, which no column holds, is the
queryset itself, on every database (:func:`_fits_64_bits`). A prepared statement belongs to a session,
which a transaction pooler (PgBouncer in transaction mode) does not keep, so it is off where the database
settings say so (:func:`server_side_prepared`).
"""

from __future__ import annotations

import copy
import itertools
import re
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from django.core.exceptions import EmptyResultSet
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections
from django.db.models import Model, QuerySet
from django.db.transaction import TransactionManagementError

M = TypeVar("M", bound=Model)

# Stand-ins: values no real query passes (integers inside a 32-bit column's range, so Django keeps the
# condition; strings no key or slug can be). Django drops a condition whose value is out of its column's
# range, so where the query then came out empty the integers are tried again inside a smallint's range.
_INT_BASE = 2_013_265_000
_SMALL_INT_BASE = 31_000
_STR_PREFIX = "\x1fprepared-"


def _stand_in(index: int, example: Any, int_base: int = _INT_BASE) -> int | str:
    if isinstance(example, bool) or not isinstance(example, int | str):
        raise TypeError(f"a prepared query's values are integers or strings, not {type(example).__name__}")
    return int_base + index if isinstance(example, int) else f"{_STR_PREFIX}{index}"


_statement_numbers = itertools.count(1)

SERVER_SIDE_PREPARED = "SERVER_SIDE_PREPARED"
"""The key of a database's settings that turns server-side prepared statements on or off (default: on,
unless ``DISABLE_SERVER_SIDE_CURSORS`` marks a transaction pooler)."""


def server_side_prepared(connection: Any) -> bool:
    """Whether prepared queries on ``connection`` become server-side prepared statements: PostgreSQL only,
    and not behind a transaction pooler (the database's ``SERVER_SIDE_PREPARED``, which defaults to the
    opposite of ``DISABLE_SERVER_SIDE_CURSORS``, Django's own setting for such poolers)."""
    if connection.vendor != "postgresql":
        return False
    settings = connection.settings_dict
    return bool(settings.get(SERVER_SIDE_PREPARED, not settings.get("DISABLE_SERVER_SIDE_CURSORS", False)))


@dataclass(frozen=True)
class _Statement:
    """A compiled query as a server-side prepared statement: its name, the ``PREPARE`` that creates it, and
    the ``EXECUTE`` that runs it (with the driver's ``%s`` placeholders for the values)."""

    name: str
    prepare: str
    execute: str

    @classmethod
    def of(cls, sql: str, types: tuple[str, ...]) -> _Statement:
        """``sql`` (Django's: ``%s`` placeholders, ``%%`` for a literal ``%``) as a statement whose parameters
        have ``types`` (one per placeholder; ``unknown``: PostgreSQL infers it); both texts are sent with the
        values, so the driver still reads ``%%`` as ``%``."""
        name = f"rankrate_q{next(_statement_numbers)}"
        numbers = itertools.count(1)
        body = re.sub(r"%[s%]", lambda m: f"${next(numbers)}" if m.group() == "%s" else "%%", sql)
        if next(numbers) - 1 != len(types):
            raise ValueError(f"prepared query: the SQL's placeholders do not match its {len(types)} parameters")
        declared = f" ({', '.join(types)})" if types else ""
        execute = f"EXECUTE {name}" + (f"({', '.join(['%s'] * len(types))})" if types else "")
        return cls(name, f"PREPARE {name}{declared} AS {body}", execute)


_VALUE_TYPES = {int: "bigint", str: "text"}
"""The type a query value is declared as in a prepared statement: every integer column compares with a
bigint (an int or smallint column through PostgreSQL's cross-type integer operators, its index still
used), and every character column with text."""


def _fits_64_bits(values: dict[str, Any]) -> bool:
    """Whether every integer value fits a bigint. One past it (2**70 as an id in a URL) is an error as a
    prepared statement's value and cannot be bound at all by SQLite's driver, where the queryset itself
    matches nothing (Django leaves out a condition no column value can meet): such a run is the queryset."""
    return all(not isinstance(value, int) or -(2**63) <= value < 2**63 for value in values.values())


def _parameter_types(params: Any, slots: tuple[tuple[int, str], ...], stand_ins: dict[str, Any]) -> tuple[str, ...]:
    """Per parameter of the SQL: the declared type of a query value, ``unknown`` for Django's own constants."""
    types = ["unknown"] * len(params)
    for position, name in slots:
        types[position] = _VALUE_TYPES[type(stand_ins[name])]
    return tuple(types)


class _Session:
    """The statements prepared on one database session (a reconnection starts a new one, with none).

    After a run failed, ``failed`` names its statement and ``known`` is False: whether its ``PREPARE`` took
    effect (it outlives a rollback) is read back from ``pg_prepared_statements`` before the next run, and a
    statement that failed is made again on its next run, so one whose plan went stale (a column's type
    changed under a running process) is not kept failing."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw
        self.names: set[str] = set()
        self.failed: set[str] = set()
        self.known = True


def _session(connection: Any) -> _Session:
    connection.ensure_connection()
    session = getattr(connection, "_rankrate_statements", None)
    if session is None or session.raw is not connection.connection:
        session = connection._rankrate_statements = _Session(connection.connection)
    if not session.known:
        with connection.cursor() as cursor:
            cursor.execute("SELECT name FROM pg_prepared_statements")
            session.names = {name for (name,) in cursor.fetchall()}
        session.known = True
    return session


@dataclass(frozen=True)
class _Compiled:
    compiler: Any  # the template's SQLCompiler, set up: select, klass_info, annotation_col_map, col_count
    sql: str
    params: tuple[Any, ...]
    slots: tuple[tuple[int, str], ...]  # (position in params, value name)
    locks: bool  # SELECT ... FOR UPDATE: needs an open transaction, as Django checks when it compiles
    iterable_class: type
    fields: tuple[str, ...] | None  # values() / values_list() names
    statement: _Statement | None  # None: no SQL (an empty result)


class _PreparedSQL:
    """Stands in for the template's ``Query`` in a fresh QuerySet: its compiler runs the kept SQL with
    this call's parameters on this thread's connection; everything else is read from the template."""

    def __init__(self, compiled: _Compiled, sql: str, params: tuple[Any, ...]) -> None:
        self._compiled, self._sql, self._params = compiled, sql, params

    def get_compiler(self, using: str | None = None, connection: Any = None, elide_empty: bool = True) -> Any:
        compiled = self._compiled
        compiler = copy.copy(compiled.compiler)
        compiler.connection = connection or connections[using or DEFAULT_DB_ALIAS]
        sql, params = self._sql, self._params
        compiler.as_sql = lambda *args, **kwargs: (sql, params)
        return compiler

    def __getattr__(self, name: str) -> Any:
        return getattr(self._compiled.compiler.query, name)


class PreparedQuery(Generic[M]):
    """``build(**values)`` as a queryset compiled once per database and ``shape``; see the module's rules."""

    def __init__(self, build: Callable[..., QuerySet[M, Any]]) -> None:
        self._build = build
        self._compiled: dict[tuple[str, Hashable], _Compiled] = {}

    def _compile(self, using: str, shape: Hashable, values: dict[str, Any]) -> _Compiled:
        for int_base in (_INT_BASE, _SMALL_INT_BASE):
            stand_ins = {name: _stand_in(i, value, int_base) for i, (name, value) in enumerate(sorted(values.items()))}
            queryset = self._build(**stand_ins) if shape is None else self._build(shape, **stand_ins)
            compiler = queryset.query.get_compiler(using=using)
            try:
                sql, params = compiler.as_sql()  # in the caller's transaction, so Django's own checks apply
                break
            except EmptyResultSet:  # built on .none() (no rows, whatever the values), or a stand-in out of range
                sql, params = "", ()
        by_value = {value: name for name, value in stand_ins.items()}
        slots = tuple((i, by_value[p]) for i, p in enumerate(params)
                      if isinstance(p, int | str) and not isinstance(p, bool) and p in by_value)
        folded = [name for name, value in stand_ins.items() if str(value) in sql]
        if folded:  # written into the SQL text, where a later run could not replace it
            raise ValueError(f"prepared query: {sorted(folded)} became part of the SQL, not parameters")
        return _Compiled(compiler, sql, tuple(params), slots, bool(queryset.query.select_for_update),
                         queryset._iterable_class, queryset._fields,  # type: ignore[attr-defined]
                         _Statement.of(sql, _parameter_types(params, slots, stand_ins)) if sql else None)

    @staticmethod
    def _sql_for(compiled: _Compiled, connection: Any) -> str:
        """What to send for ``compiled`` on ``connection``: ``EXECUTE`` of its statement, after its ``PREPARE``
        in the same round trip where this session lacks it, or the plain SQL where statements are not
        prepared. The statement is counted as prepared before it is sent: a ``PREPARE`` that took effect
        stays, even when the ``EXECUTE`` after it fails or its transaction rolls back (:class:`_Session`)."""
        statement = compiled.statement
        if statement is None or not server_side_prepared(connection):
            return compiled.sql
        session = _session(connection)
        name = statement.name
        if name in session.failed:
            session.failed.discard(name)
            if name in session.names:  # made again: DEALLOCATE, PREPARE and EXECUTE in one round trip
                return f"DEALLOCATE {name}; {statement.prepare}; {statement.execute}"
        if name in session.names:
            return statement.execute
        session.names.add(name)
        return f"{statement.prepare}; {statement.execute}"

    def run(self, shape: Hashable = None, using: str = DEFAULT_DB_ALIAS, **values: Any) -> list[M]:
        """The rows of ``build(**values)`` (``build(shape, **values)`` when a shape is given)."""
        key = (using, shape)
        compiled = self._compiled.get(key)
        if compiled is None:  # two threads may both compile it at first; either result is the same
            compiled = self._compiled[key] = self._compile(using, shape, values)
        if not compiled.sql:
            return []
        connection = connections[using]
        features = connection.features
        if (compiled.locks and features.has_select_for_update and connection.get_autocommit()
                and features.supports_transactions):  # Django's own rule, which a compiled query skips
            raise TransactionManagementError("select_for_update cannot be used outside of a transaction.")
        for value in values.values():
            _stand_in(0, value)  # the same type rule as when it was prepared
        if not _fits_64_bits(values):  # no column holds such a value: Django's own answer for it
            return list(self._build(**values) if shape is None else self._build(shape, **values))
        params = list(compiled.params)
        for position, name in compiled.slots:
            params[position] = values[name]
        template = compiled.compiler.query
        sql = self._sql_for(compiled, connection)
        stand_in_query: Any = _PreparedSQL(compiled, sql, tuple(params))
        queryset: Any = QuerySet(model=template.model, query=stand_in_query, using=using)
        queryset._iterable_class = compiled.iterable_class
        queryset._fields = compiled.fields
        try:
            return list(queryset)
        except DatabaseError:
            session = getattr(connection, "_rankrate_statements", None)
            if sql is not compiled.sql and compiled.statement is not None and session is not None:
                session.known = False  # did its PREPARE take effect? read back before the next run
                session.failed.add(compiled.statement.name)
            raise
