"""The tiny test encoder and the pure LENS samples it trains on, with no database and no Django.

A randomly initialised two-layer BERT with a word-level vocabulary (built without downloads), the
samples and training configuration that train it in well under a second per epoch, and the words both
draw from. The suite's fixtures (tests/conftest.py) and the GPU tests (tests/gpu), which also run on
machines without the web stack, build from here.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from metrics.lens import Sample, TrainConfig, Trainer

WORDS = (  # noqa: SIM905 (a vocabulary, easier to read as a sentence)
    "the cat dog sat on mat a big small red blue house tree car ran fast slow man woman saw old new "
    "city river was is and it he she they went to park with friend"
).split()


def sentence(rng: random.Random, n: int) -> str:
    """`n` words of the tiny encoder's vocabulary."""
    return " ".join(rng.choice(WORDS) for _ in range(n))


def lens_samples(n_sources: int, outputs_per_source: int, seed: int, n_refs: int = 3) -> list[Sample]:
    """Outputs that copy a reference score high, random ones low; raw ratings follow z."""
    from metrics.lens import Sample

    rng = random.Random(seed)
    samples = []
    for src in range(n_sources):
        complex_text = sentence(rng, 10)
        refs = tuple(sentence(rng, 6) for _ in range(1 + src % n_refs))
        for out in range(outputs_per_source):
            good = out % 2 == 0
            output = refs[out % len(refs)] if good else sentence(rng, 6)
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
    """A training configuration that trains the tiny encoder in well under a second per epoch."""
    from metrics.lens import LensConfig, TrainConfig

    values: dict[str, object] = {
        "model": LensConfig(encoder=str(encoder_dir), hidden_sizes=(16,), max_length=24),
        "epochs": 3,
        "batch_size": 4,
        "encoder_lr": 1e-3,
        "head_lr": 3e-3,
        "device": "cpu",
        "progress_every": 1,
        "seed": 7,
        "freeze_epochs": 1,  # pinned: the trajectories the tests check do not follow the defaults
        "rank_weight": 0.0,  # pinned: the paper's loss (Eq. 1), which the checked trajectories were computed with
        "heldout_references": None,
    }
    values.update(overrides)
    return TrainConfig(**values)  # type: ignore[arg-type]


# Training options (the API's and train_lens's `options`) for the tiny encoder.
TINY_OPTIONS = {"hidden_sizes": [16], "max_length": 24, "batch_size": 4, "encoder_lr": 1e-3, "head_lr": 3e-3,
                "progress_every": 1}


BERT_SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def build_tiny_bert(
    directory: Path,
    words: Sequence[str],
    *,
    hidden: int,
    layers: int,
    seed: int,
    max_length: int | None = None,
    positions: int = 32,
) -> Path:
    """A randomly initialised BERT with a word-level vocabulary, saved with its tokenizer under ``directory``;
    it reads ``positions`` tokens at most, and ``max_length`` sets the tokenizer's own limit."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    (directory / "vocab.txt").write_text("\n".join([*BERT_SPECIAL_TOKENS, *words]) + "\n")
    config = BertConfig(
        vocab_size=len(BERT_SPECIAL_TOKENS) + len(words),
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=2,
        intermediate_size=2 * hidden,
        max_position_embeddings=positions,
    )
    torch.manual_seed(seed)
    BertModel(config).save_pretrained(str(directory))
    # The saved config.json tells AutoTokenizer to build a (fast) BERT tokenizer from vocab.txt.
    extra = {} if max_length is None else {"model_max_length": max_length}
    AutoTokenizer.from_pretrained(str(directory), local_files_only=True, **extra).save_pretrained(str(directory))
    return directory


def tiny_bert(directory: Path) -> Path:
    """The suite's tiny encoder (2 layers, hidden 32, 24 tokens), saved with its tokenizer under ``directory``."""
    return build_tiny_bert(directory, WORDS, hidden=32, layers=2, seed=1234, max_length=24)


def frozen_trainer(encoder_dir: Path, out: Path, **overrides: object) -> Trainer:
    """A one-epoch tiny LENS trainer, built, with its encoder frozen and in eval mode and its head training."""
    from metrics.lens import Trainer

    trainer = Trainer(tiny_train_config(encoder_dir, epochs=1, **overrides), out_dir=out)
    trainer._build()
    trainer.model.encoder.set_trainable(False)
    trainer.model.train()
    trainer.model.encoder.eval()
    return trainer


# REFEREE's synthetic stages: (source id, complex, references) rows of the tiny vocabulary.
REFEREE_CORPUS: list[tuple[str, str, list[str]]] = [
    ("c0", "the old man saw the big red car in the city", ["the man saw a car", "he saw the red car",
                                                            "the old man saw a car"]),
    ("c1", "the woman went to the park with a friend and a dog", ["she went to the park", "the woman went to park",
                                                                  "she went with a friend"]),
]


def siera_rows(n: int = 10, seed: int = 1) -> list[tuple[str, str, list[str]]]:
    """SIERA corpus rows: a random 12-word source and two of its word spans as references."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        complex_text = " ".join(rng.choice(WORDS) for _ in range(12))
        words = complex_text.split()
        rows.append((f"s{i}", complex_text, [" ".join(words[:5]), " ".join(words[2:6])]))
    return rows
