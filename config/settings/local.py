"""Development: the default settings of manage.py, daphne (config.asgi), wsgi and celery.

DEBUG is on (DEBUG=0 turns it off), the secret key is a fixed development key that production
refuses, and the app answers on localhost. Everything else comes from `base` and the environment.
"""

from __future__ import annotations

import os

from .base import *  # noqa: F403
from .base import DEVELOPMENT_SECRET_KEY, env_bool, env_list

DEBUG = env_bool("DEBUG", True)
SECRET_KEY = os.environ.get("SECRET_KEY") or DEVELOPMENT_SECRET_KEY
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]")
# Serve static files from the apps' folders, so no collectstatic is needed while developing.
WHITENOISE_USE_FINDERS = DEBUG
