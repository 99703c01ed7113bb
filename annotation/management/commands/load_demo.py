"""Create the demo campaign and people (idempotent). The texts are the project's own, not released data."""

from __future__ import annotations

from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction

from annotation.models import Campaign, User
from annotation.services.assignments import campaign_add_annotators
from annotation.services.campaigns import campaign_create
from annotation.services.imports import campaign_import
from core.commands import ProjectCommand

DEMO_PASSWORD = "rank-and-rate"
PEOPLE = [
    ("admin", User.Role.ADMIN),
    ("researcher", User.Role.RESEARCHER),
    ("annotator1", User.Role.ANNOTATOR),
    ("annotator2", User.Role.ANNOTATOR),
]


class Command(ProjectCommand):
    help = "Load the demo campaign 'demo' with four people (password: rank-and-rate)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--no-analysis", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        fixtures = Path(settings.BASE_DIR) / "fixtures"
        with transaction.atomic():
            users = {}
            for username, role in PEOPLE:
                user, created = User.objects.get_or_create(username=username, defaults={"role": role})
                if created:
                    user.set_password(DEMO_PASSWORD)
                    user.is_staff = role == User.Role.ADMIN
                    user.is_superuser = role == User.Role.ADMIN
                    user.save()
                users[username] = user
            if not Campaign.objects.filter(slug="demo").exists():
                campaign = campaign_create(
                    name="Demo: Rank & Rate", slug="demo", owner=users["researcher"], ratings_per_output=2,
                    instructions=(fixtures / "demo_instructions.md").read_text(encoding="utf-8"),
                )
                with (fixtures / "demo.jsonl").open("rb") as demo:
                    campaign_import(
                        kind="jsonl", file=demo, filename="demo.jsonl", campaign_slug="demo",
                        user=users["researcher"], analyse=not options["no_analysis"],
                    )
                campaign_add_annotators(campaign=campaign, annotators=[users["annotator1"], users["annotator2"]])
        people = ", ".join(f"{u} ({r.label.lower()})" for u, r in PEOPLE)
        self.stdout.write(f"Demo logins (password for all: {DEMO_PASSWORD}): {people}")
