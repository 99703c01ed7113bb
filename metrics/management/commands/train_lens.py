"""Train a LENS version synchronously: ``train_metric --kind lens`` with a flag for each common LENS option."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import ClassVar

from metrics.learned.config import PROFILES
from metrics.lens.config import OPTION_RULES, TrainConfig
from metrics.management.commands import train_metric

DEFAULTS = TrainConfig()


class Command(train_metric.Command):
    help = (
        "Train LENS on the ratings of one or more campaigns (in this process, not on the gpu queue), print "
        "the new version id and its held-out results; --activate promotes it when training succeeded."
    )
    kind = "lens"
    flag_options: ClassVar[dict[str, str]] = {
        "encoder": "encoder", "k": "k", "epochs": "epochs", "heldout": "heldout_fraction", "seed": "seed",
        "batch_size": "batch_size", "encoder_lr": "encoder_lr", "head_lr": "head_lr", "patience": "patience",
        "config": "profile"}

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--campaign", action="append", required=True, help="campaign slug (repeatable)")
        parser.add_argument("--encoder",
                            help=f"HF name (local cache), path, or alias (default {DEFAULTS.model.encoder})")
        parser.add_argument("--k", type=int, help=f"default {DEFAULTS.k}")
        parser.add_argument("--epochs", type=int, help=f"default {DEFAULTS.epochs}")
        parser.add_argument("--heldout", type=float,
                            help=f"share of sources held out (default {DEFAULTS.heldout_fraction})")
        parser.add_argument("--seed", type=int, help=f"default {DEFAULTS.seed}")
        parser.add_argument("--batch-size", type=int)
        parser.add_argument("--encoder-lr", type=float)
        parser.add_argument("--head-lr", type=float)
        parser.add_argument("--patience", type=int)
        parser.add_argument("--config", choices=PROFILES,
                            help="cpu (the default) or research (all-mpnet-base-v2 and the paper's settings)")
        others = ", ".join(sorted(set(OPTION_RULES) - set(self.flag_options.values())))
        self.add_run_arguments(parser, f"any other training option, e.g. --option hidden_sizes=[64]; one of {others}")
