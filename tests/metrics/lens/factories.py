"""Toy rated samples and a small training configuration for the tiny test encoder."""

from __future__ import annotations

import random
from pathlib import Path

from metrics.lens import LensConfig, Sample, TrainConfig

WORDS = (  # noqa: SIM905
    "the cat dog sat on mat a big small red blue house tree car ran fast slow man woman saw old new "
    "city river was is and it he she they went to park with friend"
).split()


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def make_samples(n_sources: int, outputs_per_source: int, seed: int, n_refs: int = 3) -> list[Sample]:
    """Outputs that copy a reference score high, random ones low; raw ratings follow z."""
    rng = random.Random(seed)
    samples = []
    for src in range(n_sources):
        complex_text = _sentence(rng, 10)
        refs = tuple(_sentence(rng, 6) for _ in range(1 + src % n_refs))
        for out in range(outputs_per_source):
            good = out % 2 == 0
            output = refs[out % len(refs)] if good else _sentence(rng, 6)
            z = (1.0 if good else -1.0) + rng.uniform(-0.2, 0.2)
            rating = 50 + 25 * z
            samples.append(
                Sample(
                    source_id=f"s{src}",
                    output_id=f"o{out}",
                    complex=complex_text,
                    output=output,
                    references=refs,
                    z=z,
                    category=None if src % 2 else "paraphrase",
                    ratings={"r1": rating, "r2": rating + rng.uniform(-3, 3)},
                )
            )
    return samples


def tiny_train_config(encoder_dir: Path, **overrides: object) -> TrainConfig:
    values: dict[str, object] = {
        "model": LensConfig(encoder=str(encoder_dir), hidden_sizes=(16,), max_length=24),
        "epochs": 3,
        "batch_size": 4,
        "encoder_lr": 1e-3,
        "head_lr": 3e-3,
        "device": "cpu",
        "progress_every": 1,
        "seed": 7,
    }
    values.update(overrides)
    return TrainConfig(**values)  # type: ignore[arg-type]
