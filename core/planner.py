"""Planner statistics refreshed after bulk writes, so the first queries on new rows get the right plan.

PostgreSQL plans from statistics that autovacuum's ANALYZE refreshes only after its nap (a minute by
default), once enough rows changed, and never where autovacuum is off. Until then a table that just
gained thousands of rows is planned as if it had a handful. The claim of work is the case that matters:
on a campaign the planner has not seen, it sorts every free slot instead of reading the first one from
``slot_free_in_order``. A bulk write of ``BULK_ROWS`` rows or more therefore asks for the table's ANALYZE once its
transaction commits.

Other databases are left alone: SQLite's planner prefers an index without statistics.
"""

from __future__ import annotations

from django.db import connections, models, router, transaction

BULK_ROWS = 1000


def analyze_after_bulk_write(model: type[models.Model], rows: int) -> None:
    """Queue ``ANALYZE`` of ``model``'s table for after the current commit (at once outside a transaction)
    when ``rows`` new rows make it a bulk write on PostgreSQL."""
    using = router.db_for_write(model)
    connection = connections[using]
    if rows < BULK_ROWS or connection.vendor != "postgresql":
        return
    table = connection.ops.quote_name(model._meta.db_table)

    def analyze() -> None:
        with connections[using].cursor() as cursor:
            cursor.execute(f"ANALYZE {table}")

    transaction.on_commit(analyze, using=using)
