"""The base of the project's management commands."""

from __future__ import annotations

from django.core.management.base import BaseCommand


class ProjectCommand(BaseCommand):
    """A management command that skips Django's system checks before it runs.

    The checks validate the web app's configuration: they import the whole URLconf (every API view, the
    schema generator, the pages), a large part of a command's start-up, for settings the command does not
    use. They still run where
    the configuration matters: ``manage.py check`` (``--deploy`` in production), ``migrate``, ``runserver``
    and the test suite (tests/test_project.py).
    """

    requires_system_checks = []
