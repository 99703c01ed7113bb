"""Querysets built and compiled once per process, then run again with other values (issue 12).

Building a queryset and compiling it to SQL can cost a request more than running it: the submit's locking
read of the assignment (with its source, its campaign and two EXISTS) took 1.8 ms of CPU to build and
compile and 0.2 ms to run. A :class:`PreparedQuery` calls its builder once, with stand-in values, keeps
the compiled SQL, its parameters and the compiler (which knows the layout of the selected columns), and on
each call runs the same SQL with the stand-ins' parameters replaced by the call's values. Rows become
objects through Django's own iterables, as they would for the queryset itself.

Rules for a builder:
- its keyword arguments are query values (ids, keys, slugs: integers or strings) used as filter or
  annotation values and never branched on, so the SQL's shape does not depend on them; what the shape
  does depend on (a user's role, say) is passed as ``shape`` and gets an SQL of its own;
- ``run`` returns the whole result as a list (slice in the builder; no prefetching).

A stand-in written into the SQL text (a value Django inlined) is refused when the query is prepared; one
that a shape does not use is simply not a parameter of that shape's SQL. ``select_for_update`` keeps
Django's check that a transaction is open. The package django-prepared-queries did this for Django < 2.2
and is not maintained.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from django.core.exceptions import EmptyResultSet
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import Model, QuerySet
from django.db.transaction import TransactionManagementError

M = TypeVar("M", bound=Model)

# Stand-ins: values no real query passes (integers inside a 32-bit column's range, so Django keeps the
# condition; strings no key or slug can be).
_INT_BASE = 2_013_265_000
_STR_PREFIX = "\x1fprepared-"


def _stand_in(index: int, example: Any) -> int | str:
    if isinstance(example, bool) or not isinstance(example, int | str):
        raise TypeError(f"a prepared query's values are integers or strings, not {type(example).__name__}")
    return _INT_BASE + index if isinstance(example, int) else f"{_STR_PREFIX}{index}"


@dataclass(frozen=True)
class _Compiled:
    compiler: Any  # the template's SQLCompiler, set up: select, klass_info, annotation_col_map, col_count
    sql: str
    params: tuple[Any, ...]
    slots: tuple[tuple[int, str], ...]  # (position in params, value name)
    locks: bool  # SELECT ... FOR UPDATE: needs an open transaction, as Django checks when it compiles
    iterable_class: type
    fields: tuple[str, ...] | None  # values() / values_list() names


class _PreparedSQL:
    """Stands in for the template's ``Query`` in a fresh QuerySet: its compiler runs the kept SQL with
    this call's parameters on this thread's connection; everything else is read from the template."""

    def __init__(self, compiled: _Compiled, params: tuple[Any, ...]) -> None:
        self._compiled, self._params = compiled, params

    def get_compiler(self, using: str | None = None, connection: Any = None, elide_empty: bool = True) -> Any:
        compiled = self._compiled
        compiler = copy.copy(compiled.compiler)
        compiler.connection = connection or connections[using or DEFAULT_DB_ALIAS]
        sql, params = compiled.sql, self._params
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
        stand_ins = {name: _stand_in(i, value) for i, (name, value) in enumerate(sorted(values.items()))}
        queryset = self._build(**stand_ins) if shape is None else self._build(shape, **stand_ins)
        compiler = queryset.query.get_compiler(using=using)
        try:
            sql, params = compiler.as_sql()  # in the caller's transaction, so Django's own checks apply
        except EmptyResultSet:  # e.g. built on .none(): no rows, whatever the values
            sql, params = "", ()
        by_value = {value: name for name, value in stand_ins.items()}
        slots = tuple((i, by_value[p]) for i, p in enumerate(params)
                      if isinstance(p, int | str) and not isinstance(p, bool) and p in by_value)
        folded = [name for name, value in stand_ins.items() if str(value) in sql]
        if folded:  # written into the SQL text, where a later run could not replace it
            raise ValueError(f"prepared query: {sorted(folded)} became part of the SQL, not parameters")
        return _Compiled(compiler, sql, tuple(params), slots, bool(queryset.query.select_for_update),
                         queryset._iterable_class, queryset._fields)  # type: ignore[attr-defined]

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
        params = list(compiled.params)
        for position, name in compiled.slots:
            params[position] = values[name]
        template = compiled.compiler.query
        stand_in_query: Any = _PreparedSQL(compiled, tuple(params))
        queryset: Any = QuerySet(model=template.model, query=stand_in_query, using=using)
        queryset._iterable_class = compiled.iterable_class
        queryset._fields = compiled.fields
        return list(queryset)
