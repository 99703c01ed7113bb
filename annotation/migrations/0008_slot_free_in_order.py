"""Slots carry their source's campaign and order, with a partial index over the free ones in that order."""

from django.db import migrations, models
from django.db.models import OuterRef, Subquery


def copy_from_source(apps, schema_editor):  # type: ignore[no-untyped-def]
    Slot = apps.get_model("annotation", "Slot")
    Source = apps.get_model("annotation", "Source")
    source = Source.objects.filter(pk=OuterRef("source_id"))
    Slot.objects.update(campaign_id=Subquery(source.values("campaign_id")[:1]),
                        position=Subquery(source.values("order")[:1]))


class Migration(migrations.Migration):
    dependencies = [("annotation", "0007_quality_control")]

    operations = [
        migrations.AddField(
            model_name="slot", name="campaign",
            field=models.ForeignKey(null=True, db_index=False, on_delete=models.deletion.CASCADE,
                                    related_name="+", to="annotation.campaign"),
        ),
        migrations.AddField(model_name="slot", name="position", field=models.PositiveIntegerField(null=True)),
        migrations.RunPython(copy_from_source, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="slot", name="campaign",
            field=models.ForeignKey(db_index=False, on_delete=models.deletion.CASCADE, related_name="+",
                                    to="annotation.campaign"),
        ),
        migrations.AlterField(model_name="slot", name="position", field=models.PositiveIntegerField()),
        migrations.AddIndex(
            model_name="slot",
            index=models.Index(condition=models.Q(("assignment__isnull", True)),
                               fields=["campaign", "position", "source", "index"], name="slot_free_in_order"),
        ),
    ]
