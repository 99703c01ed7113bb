"""Indexes for what every claim asks, in place of the campaign's own index on assignments and sources.

A claim reads the annotator's unfinished assignment, looks for idle ones to release and asks whether the
campaign has tutorials. With only the campaign's index, each of these read all of a campaign's assignments
or sources, and the planner kept choosing that index for a campaign its statistics did not know yet.
``(campaign, status)`` and ``(campaign, is_tutorial)`` answer them from the few rows asked for, and serve
every lookup by campaign alone as well. The new indexes are made before the old ones are dropped.
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("annotation", "0008_slot_free_in_order")]

    operations = [
        migrations.AddIndex(
            model_name="assignment",
            index=models.Index(fields=["campaign", "status"], name="assignment_campaign_status"),
        ),
        migrations.AddIndex(
            model_name="source",
            index=models.Index(fields=["campaign", "is_tutorial"], name="source_campaign_tutorial"),
        ),
        migrations.AlterField(
            model_name="assignment", name="campaign",
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE,
                                    related_name="assignments", to="annotation.campaign"),
        ),
        migrations.AlterField(
            model_name="source", name="campaign",
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE,
                                    related_name="sources", to="annotation.campaign"),
        ),
    ]
