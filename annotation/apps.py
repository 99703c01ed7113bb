from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from core.services import reap_hook_register

        # Every worker's reaper also removes the imports killed partway (annotation.services.imports).
        reap_hook_register("annotation.services.imports.imports_reap")
