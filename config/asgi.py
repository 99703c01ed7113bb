"""ASGI entry point: HTTP through Django, websockets through Channels (served by daphne)."""

import os
import sys

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

from core.asgi import sync_chain_asgi_application

# Django's ASGI handler with its (all synchronous) middleware and views run in one thread hand-off per request,
# on HTTP_MAX_CONCURRENCY long-lived request threads (16 when it is 0), each keeping its database connection.
django_asgi_app = sync_chain_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.conf import settings  # noqa: E402

from config.routing import websocket_urlpatterns  # noqa: E402
from core.body_limit import BodyLimit  # noqa: E402
from core.concurrency import ConcurrencyLimit  # noqa: E402

if "daphne.server" in sys.modules:  # served by daphne, which reads a whole body before the application runs
    from core.daphne_body_limit import install

    install(settings.MAX_BODY_BYTES)

application = ProtocolTypeRouter(
    {
        # At most HTTP_MAX_CONCURRENCY requests (threads, database connections) at once, of which
        # HTTP_ANNOTATION_CONCURRENCY are annotators' and the rest everyone else's; the others wait.
        # Bodies of at most MAX_BODY_BYTES, refused before a request waits for one of those places.
        "http": BodyLimit(ConcurrencyLimit(django_asgi_app, settings.HTTP_MAX_CONCURRENCY,
                                           annotation_limit=settings.HTTP_ANNOTATION_CONCURRENCY),
                          settings.MAX_BODY_BYTES),
        "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)
