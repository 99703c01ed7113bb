"""Live training progress of a learned-metric version for the admin page, relayed from the Channels group
``learned-<version id>``.

On connect the browser first gets the persisted curve and status (``training.snapshot``), so a reload shows
the curve so far; then each event the training broadcasts (``training.progress``, ``training.status``).
"""

from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async

from core.consumers import LiveGroupsConsumer
from metrics.models import LearnedVersion
from metrics.selectors import (
    learned_version_events,
    learned_version_list_for,
    learned_version_state,
    testbed_job_list_for,
)
from metrics.services.training import learned_group


def _full_details(user: Any, version_id: int) -> bool | None:
    """None: no version the user may see; else whether they see its full details (the curve among them)."""
    version = learned_version_list_for(user=user).filter(pk=version_id).first()
    return None if version is None else bool(getattr(version, "full_details", False))


def _snapshot(version_id: int) -> dict[str, Any]:
    version = LearnedVersion.objects.get(pk=version_id)
    return {"event": "training.snapshot", **learned_version_state(version), "events": learned_version_events(version)}


def _route_id(scope: dict[str, Any], key: str) -> int | None:
    """A database id from the URL route, or None: the route's \\d also matches non-ASCII digits and has no
    length limit, and an id that is no 64-bit key names nothing."""
    raw = str(scope["url_route"]["kwargs"][key])
    return int(raw) if raw.isascii() and raw.isdigit() and len(raw) <= 18 else None


class TrainingProgressConsumer(LiveGroupsConsumer):
    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated or not user.is_researcher:
            await self.close(code=4403)
            return
        version_id = _route_id(self.scope, "version_id")
        full = None if version_id is None else await database_sync_to_async(_full_details)(user, version_id)
        if version_id is None or full is None:
            await self.close(code=4404)
            return
        if not full:  # the curve and status details are for those who see the version's full details
            await self.close(code=4403)
            return
        # Join before reading the stored curve so no event falls between the two (the page drops repeats).
        await self.live_join(learned_group(version_id))
        await self.accept()
        await self.send_json(await database_sync_to_async(_snapshot)(version_id))


def _job_state(user: Any, job_id: int) -> dict[str, Any] | None:
    """The run's state if ``user`` may see it (``testbed_job_list_for``), else None."""
    job = testbed_job_list_for(user=user).filter(pk=job_id).first()
    if job is None:
        return None
    return {"event": "testbed.progress", "status": job.status, "done": job.done, "total": job.total,
            "error": job.error}


class TestbedProgressConsumer(LiveGroupsConsumer):
    """Progress of a perturbation-testbed job (its group, ``testbed_group``); the first message is its state."""

    async def connect(self) -> None:
        from metrics.services.testbed import testbed_group

        user = self.scope.get("user")
        if user is None or not user.is_authenticated or not user.is_researcher:
            await self.close(code=4403)
            return
        job_id = _route_id(self.scope, "job_id")
        if job_id is None:
            await self.close(code=4404)
            return
        await self.live_join(testbed_group(job_id))
        state = await database_sync_to_async(_job_state)(user, job_id)
        if state is None:
            await self.live_leave()
            await self.close(code=4404)
            return
        await self.accept()
        await self.send_json(state)
