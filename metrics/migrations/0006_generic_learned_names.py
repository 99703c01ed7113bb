"""LensModelVersion and LensTrainingEvent serve every learned kind: they become LearnedVersion and
TrainingEvent. Their tables keep their names (no row is rewritten); only the many-to-many table's column
that points at a version follows the model's new name."""

from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0001_initial"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("metrics", "0005_learned_kinds"),
    ]

    operations = [
        migrations.RenameModel("LensModelVersion", "LearnedVersion"),
        migrations.AlterModelTable("learnedversion", "metrics_lensmodelversion"),
        migrations.RenameModel("LensTrainingEvent", "TrainingEvent"),
        migrations.AlterModelTable("trainingevent", "metrics_lenstrainingevent"),
        migrations.AlterField(
            model_name="learnedversion",
            name="campaigns",
            field=models.ManyToManyField(related_name="learned_versions", to="annotation.campaign"),
        ),
        migrations.AlterField(
            model_name="learnedversion",
            name="started_by",
            field=models.ForeignKey(
                blank=True, null=True, on_delete=models.deletion.SET_NULL, related_name="learned_versions",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
    ]
