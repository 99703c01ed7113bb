"""How a service queues a Celery task without importing the module that defines it.

Tasks import the services they call; a service that queues work names the task instead
(``task_send_on_commit("metrics.tasks.learned_train_run", version.pk)``), so no service imports a tasks
module back. The task is sent once the current transaction commits (a worker never sees uncommitted rows),
and through the task object when this process knows it, so the settings' eager mode runs it in tests as
``delay`` would.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Mapping, Sequence
from typing import Any

from django.db import transaction


def task_send(
    name: str,
    args: Sequence[object] = (),
    kwargs: Mapping[str, object] | None = None,
    *,
    queue: str | None = None,
) -> None:
    """Send the task ``name`` (``"app.tasks.function"``) now; ``queue`` overrides its route."""
    from celery import current_app

    task = current_app.tasks.get(name)
    if task is None:  # its module was not imported in this process yet (tasks are named after it)
        with contextlib.suppress(ImportError):
            importlib.import_module(name.rpartition(".")[0])
        task = current_app.tasks.get(name)
    options: dict[str, Any] = {"queue": queue} if queue else {}
    if task is None:
        current_app.send_task(name, args=list(args), kwargs=dict(kwargs or {}), **options)
    elif options:
        task.apply_async(args=tuple(args), kwargs=dict(kwargs or {}), **options)
    else:
        task.delay(*args, **dict(kwargs or {}))


def task_send_on_commit(
    name: str,
    args: Sequence[object] = (),
    kwargs: Mapping[str, object] | None = None,
    *,
    queue: str | None = None,
) -> None:
    """:func:`task_send` once the current transaction commits (at once outside a transaction)."""
    frozen_args = list(args)
    frozen_kwargs = dict(kwargs or {})
    transaction.on_commit(lambda: task_send(name, frozen_args, frozen_kwargs, queue=queue))
