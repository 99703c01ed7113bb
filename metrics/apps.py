from django.apps import AppConfig


class MetricsConfig(AppConfig):
    name = "metrics"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from core.services import delivery_register
        from evaluation.export_extras import register_output_extra
        from metrics.services.metric_registry import register_learned_provider

        register_learned_provider()
        # Every worker's reaper also reaps training runs left running by a dead worker.
        delivery_register("metrics.services.training.TRAINING")
        # Each output of the JSONL export carries its stored scores (evaluation cannot import metrics).
        register_output_extra("metric_scores", "metrics.services.metric_scores.export_scores")
