from django.apps import AppConfig


class CoreConfig(AppConfig):
    """What every app uses: errors and the API's answer to them, permissions, events, background jobs.

    ``core`` imports none of the other apps (``tests/test_architecture.py`` keeps it so).
    """

    name = "core"
    verbose_name = "Core"
    default_auto_field = "django.db.models.BigAutoField"
