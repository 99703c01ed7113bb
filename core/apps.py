from django.apps import AppConfig


class CoreConfig(AppConfig):
    """What every app uses: errors and the API's answer to them, permissions, events, background jobs.

    ``core`` imports none of the other apps (``tests/test_architecture.py`` keeps it so).
    """

    name = "core"
    verbose_name = "Core"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_out

        user_logged_out.connect(_revoke_api_tokens, dispatch_uid="core.revoke_api_tokens")


def _revoke_api_tokens(sender: object, user: object, **kwargs: object) -> None:
    """Logging out of the pages also revokes the user's API token."""
    from rest_framework.authtoken.models import Token

    pk = getattr(user, "pk", None)
    if pk is not None:
        Token.objects.filter(user_id=pk).delete()
