from django.apps import AppConfig


class MetricsConfig(AppConfig):
    name = "metrics"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from metrics.services.metric_registry import register_lens_provider
        from metrics.services.metric_scores import register_export_scores

        register_lens_provider()
        register_export_scores()
