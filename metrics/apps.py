from typing import Any

from django.apps import AppConfig

from metrics.suite import Metric


class MetricsConfig(AppConfig):
    name = "metrics"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from annotation.services.allocation import allocation_priorities_register
        from core.services import delivery_register
        from evaluation.export_extras import register_output_extra
        from metrics.suite import register_provider

        # Registered without a name list: the suite's own ``available_metrics`` stays free of database reads
        # (the pure tests and the JSONL command use it); the product's ``all`` adds the versions itself.
        register_provider("learned", learned_provider)
        # Every worker's reaper also reaps training runs left running by a dead worker.
        delivery_register("metrics.services.training.TRAINING")
        # Each output of the JSONL export carries its stored scores (evaluation cannot import metrics).
        register_output_extra("metric_scores", "metrics.services.metric_scores.export_scores")
        # Adaptive campaigns hand out sources by priorities read from the stored metric scores (annotation
        # cannot import metrics).
        allocation_priorities_register("metrics.services.allocation.campaign_source_priorities")


def learned_provider(name: str, options: dict[str, Any]) -> Metric | None:
    """The suite provider of every learned kind's versions, loaded on the first look-up: the metric registry
    reads the database and the statistics core, which Django's start-up does not need."""
    from metrics.services.metric_registry import learned_provider as provide

    return provide(name, options)
