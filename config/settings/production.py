"""Production: base plus HTTPS hardening. Asked for with DJANGO_SETTINGS_MODULE=config.settings.production.

Nothing secret has a default: SECRET_KEY and ALLOWED_HOSTS must be set (the development key is
refused), and DEBUG is always off. `manage.py check --deploy` is clean with the defaults below.
Behind a TLS-terminating proxy that sets X-Forwarded-Proto (the default assumption), requests it
forwarded over HTTPS count as secure; SECURE_SSL_REDIRECT=0 leaves the redirect to that proxy.
"""

from __future__ import annotations

import os

from django.core.exceptions import ImproperlyConfigured

from .base import *  # noqa: F403
from .base import DEVELOPMENT_SECRET_KEY, env_bool, env_list

DEBUG = False
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    raise ImproperlyConfigured("SECRET_KEY must be set with the production settings.")
if SECRET_KEY == DEVELOPMENT_SECRET_KEY:
    raise ImproperlyConfigured("SECRET_KEY is the development key; set a secret one for production.")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS")
if not ALLOWED_HOSTS:
    raise ImproperlyConfigured("ALLOWED_HOSTS must be set with the production settings (comma-separated host names).")
WHITENOISE_USE_FINDERS = False

# --- HTTPS ------------------------------------------------------------------
if env_bool("SECURE_PROXY_SSL_HEADER", True):  # trust X-Forwarded-Proto: only behind a proxy that sets it
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]  # container health checks speak plain HTTP inside the network
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", str(60 * 60 * 24 * 365)))
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", True)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
