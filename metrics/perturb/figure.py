"""The LENS paper's Figure 2 systems for one source: Copy, Drop 10%, Scramble 5%, Split, Human."""

from __future__ import annotations

import random

from metrics.perturb.base import REGISTRY, Context
from metrics.perturb.perturbations import drop_random

LENS_SYSTEMS = ("Copy", "Drop", "Scramble", "Split", "Human")


def lens_systems(source: str, human: str, *, seed: int) -> dict[str, str]:
    """The outputs of the five systems of LENS Figure 2 for ``source``.

    Copy returns the source; Drop deletes 10% of its words at random; Scramble moves 5% of them (at least
    two); Split ends the sentence with a period in its middle; Human is a human simplification (scored
    against the other references, as the paper scores one of its two against the other).
    """
    dropped = drop_random(source, 10, random.Random(f"drop|{seed}|{source}"), Context())[0]
    return {
        "Copy": source,
        "Drop": dropped,
        "Scramble": REGISTRY["reorder"](source, magnitude=5, seed=seed).text,
        "Split": REGISTRY["split_middle"](source, magnitude=100, seed=seed).text,
        "Human": human,
    }
