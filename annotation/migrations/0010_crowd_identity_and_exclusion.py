"""Crowd identity and exclusion that stops work.

* ``CrowdWorker.key``: the secret that binds a crowd account to the browser of its first visit (and is the
  worker's personal link). Each worker already stored gets their own random key; they keep working in the
  browser they are signed in with, and their personal link is shown there.
* ``Campaign.crowd_places``: the study's places on the platform (empty: as many as there is free work for).
* ``AnnotatorExclusion.crowd_end``: what an excluded crowd worker sees at the end, the researcher's choice.
  Exclusions made before it keep showing the completion code, as they did when they were made; new ones
  default to the "excluded" page without a code.
"""

import secrets

import django.core.validators
from django.db import migrations, models

import annotation.models


def give_each_worker_a_key(apps, schema_editor):
    CrowdWorker = apps.get_model("annotation", "CrowdWorker")
    for worker in CrowdWorker.objects.filter(key__isnull=True).only("pk").iterator():
        CrowdWorker.objects.filter(pk=worker.pk).update(key=secrets.token_urlsafe(24))


class Migration(migrations.Migration):

    dependencies = [
        ("annotation", "0009_campaign_status_indexes"),
    ]

    operations = [
        migrations.AddField(
            model_name="annotatorexclusion",
            name="crowd_end",
            field=models.CharField(
                choices=[("excluded", "a page saying the submission was excluded, with no completion code"),
                         ("code", "the completion code, as to everyone else")],
                default="code", max_length=16),
        ),
        migrations.AlterField(
            model_name="annotatorexclusion",
            name="crowd_end",
            field=models.CharField(
                choices=[("excluded", "a page saying the submission was excluded, with no completion code"),
                         ("code", "the completion code, as to everyone else")],
                default="excluded", max_length=16),
        ),
        migrations.AddField(
            model_name="campaign",
            name="crowd_places",
            field=models.PositiveIntegerField(
                blank=True, null=True,
                help_text="Crowd workers the study admits at most, as its places on the platform (empty: as many "
                          "as there is free work for).",
                validators=[django.core.validators.MinValueValidator(1),
                            django.core.validators.MaxValueValidator(1000000)]),
        ),
        migrations.AddField(
            model_name="crowdworker",
            name="key",
            field=models.CharField(editable=False, max_length=64, null=True),
        ),
        migrations.RunPython(give_each_worker_a_key, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="crowdworker",
            name="key",
            field=models.CharField(default=annotation.models.new_crowd_key, editable=False, max_length=64,
                                   unique=True),
        ),
    ]
