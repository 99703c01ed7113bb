"""core.concurrency: a web process works on at most N HTTP requests at once; websockets pass."""

import asyncio

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
