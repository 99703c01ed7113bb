"""BackgroundJob moves from annotation to core, keeping its rows.

The table was created by annotation 0001 as ``annotation_backgroundjob`` with a foreign key to
``annotation_campaign``. Here core takes the model over in Django's state only, then changes the table:
the campaign key becomes a generic subject (content type + id, so core imports no app), each existing
job keeps its campaign as its subject, and the table is renamed ``core_backgroundjob``. annotation 0002
drops the model from annotation's state (no database change).
"""

import django.db.models.deletion
from django.db import migrations, models
from django.db.models import F


def campaign_to_subject(apps, schema_editor):
    BackgroundJob = apps.get_model("core", "BackgroundJob")
    if not BackgroundJob.objects.exists():
        return
    ContentType = apps.get_model("contenttypes", "ContentType")
    campaign_type, _ = ContentType.objects.get_or_create(app_label="annotation", model="campaign")
    BackgroundJob.objects.update(subject_type=campaign_type, subject_id=F("campaign_id"))


def subject_to_campaign(apps, schema_editor):
    BackgroundJob = apps.get_model("core", "BackgroundJob")
    # Jobs about anything but a campaign cannot go back to the old table, which requires a campaign.
    BackgroundJob.objects.exclude(subject_type__app_label="annotation", subject_type__model="campaign").delete()
    BackgroundJob.objects.update(campaign_id=F("subject_id"))


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ("annotation", "0001_initial"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="BackgroundJob",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("kind", models.CharField(max_length=32)),
                        ("status", models.CharField(choices=[("queued", "Queued"), ("running", "Running"), ("done", "Done"), ("failed", "Failed")], default="queued", max_length=16)),
                        ("done", models.PositiveIntegerField(default=0)),
                        ("total", models.PositiveIntegerField(default=0)),
                        ("error", models.TextField(blank=True)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("finished_at", models.DateTimeField(blank=True, null=True)),
                        ("campaign", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="+", to="annotation.campaign")),
                    ],
                    options={"ordering": ["-created_at"], "db_table": "annotation_backgroundjob"},
                ),
            ],
            database_operations=[],
        ),
        migrations.AddField(
            model_name="backgroundjob",
            name="subject_type",
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, to="contenttypes.contenttype"),
        ),
        migrations.AddField(
            model_name="backgroundjob",
            name="subject_id",
            field=models.PositiveBigIntegerField(blank=True, null=True),
        ),
        # Nullable first, so that going back can add the column before filling it.
        migrations.AlterField(
            model_name="backgroundjob",
            name="campaign",
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.CASCADE, related_name="+", to="annotation.campaign"),
        ),
        migrations.RunPython(campaign_to_subject, subject_to_campaign),
        migrations.RemoveField(model_name="backgroundjob", name="campaign"),
        migrations.AlterField(
            model_name="backgroundjob",
            name="error",
            field=models.TextField(blank=True, help_text="Why it failed; for a finished job, a note (e.g. what was skipped)."),
        ),
        migrations.AlterModelTable(name="backgroundjob", table=None),
        migrations.AddIndex(
            model_name="backgroundjob",
            index=models.Index(fields=["subject_type", "subject_id"], name="core_job_subject"),
        ),
    ]
