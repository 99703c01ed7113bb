"""core.concurrency: a web process works on at most N HTTP requests at once; websockets pass."""

import asyncio

import pytest

from core.concurrency import ConcurrencyLimit


def test_at_most_the_limit_of_http_requests_run_at_once_and_the_rest_wait():
    inside = {"now": 0, "most": 0, "done": 0}

    async def app(scope, receive, send):
        inside["now"] += 1
        inside["most"] = max(inside["most"], inside["now"])
        await asyncio.sleep(0.01)
        inside["now"] -= 1
        inside["done"] += 1

    limited = ConcurrencyLimit(app, 3)

    async def burst():
        await asyncio.gather(*(limited({"type": "http"}, None, None) for _ in range(10)))
        await asyncio.gather(*(limited({"type": "websocket"}, None, None) for _ in range(5)))

    asyncio.run(burst())
    assert inside["done"] == 15
    assert inside["most"] == 5  # the 10 requests three at a time; the 5 websockets all at once


def test_zero_means_no_cap():
    seen = []

    async def app(scope, receive, send):
        seen.append(scope["type"])

    asyncio.run(ConcurrencyLimit(app, 0)({"type": "http"}, None, None))
    assert seen == ["http"]


def _tracking_app(inside, release):
    """An app that counts the requests inside it per path, and holds those whose path starts with /slow
    until ``release`` is set."""

    async def app(scope, receive, send):
        kind = "slow" if scope["path"].startswith("/slow") else scope["path"]
        inside[kind] = inside.get(kind, 0) + 1
        inside["most " + kind] = max(inside.get("most " + kind, 0), inside[kind])
        if kind == "slow":
            await release.wait()
        else:
            await asyncio.sleep(0.005)
        inside[kind] -= 1
        inside["done " + kind] = inside.get("done " + kind, 0) + 1

    return app


async def _until(condition):
    """Return once ``condition()`` holds, letting the other tasks run in between (bound it with wait_for)."""
    while not condition():
        await asyncio.sleep(0)


def test_annotators_have_a_lane_that_slow_requests_cannot_take(monkeypatch):
    from core import concurrency

    monkeypatch.setattr(concurrency, "lane_of", lambda path: "annotation" if path == "/annotate" else "other")
    inside: dict[str, int] = {}

    async def run():
        release = asyncio.Event()
        limited = ConcurrencyLimit(_tracking_app(inside, release), 4, annotation_limit=2)
        slow = [asyncio.create_task(limited({"type": "http", "path": f"/slow/{i}"}, None, None)) for i in range(5)]
        await asyncio.wait_for(_until(lambda: inside.get("slow") == 2), timeout=2)
        # every other thread is held by a slow request; annotators still go through, two at a time
        await asyncio.wait_for(asyncio.gather(
            *(limited({"type": "http", "path": "/annotate"}, None, None) for _ in range(8))), timeout=2)
        assert inside["slow"] == 2 and inside.get("done slow", 0) == 0
        release.set()
        await asyncio.gather(*slow)

    asyncio.run(run())
    assert inside["done /annotate"] == 8 and inside["most /annotate"] == 2
    assert inside["done slow"] == 5 and inside["most slow"] == 2


def test_the_root_path_is_not_part_of_the_path_that_picks_the_lane(monkeypatch):
    from core import concurrency

    asked: list[str] = []

    def lane_of(path):
        asked.append(path)
        return "other"

    monkeypatch.setattr(concurrency, "lane_of", lane_of)
    limited = ConcurrencyLimit(lambda scope, receive, send: asyncio.sleep(0), 4, annotation_limit=1)
    asyncio.run(limited({"type": "http", "path": "/study/api/x/", "root_path": "/study"}, None, None))
    assert asked == ["/api/x/"]


def test_lane_sizes_are_checked():
    from core.concurrency import lane_limits

    assert lane_limits(4, 2) == {"annotation": 2, "other": 2}
    assert lane_limits(4, 0) == {"other": 4}
    assert lane_limits(0, 2) == {}
    with pytest.raises(ValueError, match=r"HTTP_ANNOTATION_CONCURRENCY \(4\) must be below HTTP_MAX_CONCURRENCY \(4\)"):
        lane_limits(4, 4)
    with pytest.raises(ValueError, match="0 or positive"):
        lane_limits(-1, 0)


def test_the_annotators_requests_and_only_those_are_in_their_lane():
    from django.urls import reverse

    from core.concurrency import lane_of

    annotators = [reverse("assignment-next", args=["c"]), reverse("assignment-detail", args=[1]),
                  reverse("assignment-draft", args=[1]), reverse("assignment-submit", args=[1]),
                  reverse("annotation-detail", args=[1]), reverse("frontend:annotate", args=[1]),
                  reverse("frontend:continue", args=["c"])]
    others = [reverse("campaign-import", args=["c"]), reverse("campaign-progress", args=["c"]),
              reverse("annotation-reopen", args=[1]), reverse("assignment-list"), reverse("frontend:home"),
              reverse("healthz"), "/no/such/page/"]
    assert [lane_of(path) for path in annotators] == ["annotation"] * len(annotators)
    assert [lane_of(path) for path in others] == ["other"] * len(others)
