"""BackgroundJob now lives in core (see core 0001, which keeps the rows): drop it from annotation's state."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("annotation", "0001_initial"),
        ("core", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="BackgroundJob")],
            database_operations=[],
        ),
    ]
