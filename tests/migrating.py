"""Moving the test database to a point of the migration graph, for the tests of data migrations."""

from __future__ import annotations

from collections.abc import Sequence

from django.db import connection
from django.db.migrations.executor import MigrationExecutor


def migrate_to(targets: Sequence[tuple[str, str | None]]) -> MigrationExecutor:
    """Migrate the test database to ``targets``; a fresh executor whose loader sees the graph as it is now."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(list(targets))
    return MigrationExecutor(connection)
