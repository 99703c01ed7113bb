# One image for the web server and both kinds of worker.
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends build-essential libpq-dev curl \
    && rm -rf /var/lib/apt/lists/*
COPY pyproject.toml README.md ./
COPY config ./config
COPY annotation ./annotation
COPY evaluation ./evaluation
COPY metrics ./metrics
COPY frontend ./frontend
COPY fixtures ./fixtures
COPY manage.py ./
# TORCH_INDEX lets a GPU image take a CUDA build of PyTorch 2.13.0 instead of the CPU one.
ARG TORCH_SPEC="torch==2.13.0"
RUN pip install --no-cache-dir "$TORCH_SPEC" && pip install --no-cache-dir -e .
# Static files live in the image, outside the /data volume; every settings module reads STATIC_ROOT.
# Collected with the development settings, which need no secret at build time.
ENV STATIC_ROOT=/app/staticfiles
RUN DJANGO_SETTINGS_MODULE=config.settings.local python manage.py collectstatic --noinput -v0
# The image runs the production settings: it refuses to start without SECRET_KEY and ALLOWED_HOSTS.
ENV DJANGO_SETTINGS_MODULE=config.settings.production
EXPOSE 8000
CMD ["daphne", "-b", "0.0.0.0", "-p", "8000", "config.asgi:application"]
