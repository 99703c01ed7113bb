"""REFEREE's options: one flat :class:`~metrics.learned.config.LearnedConfig` (JSON round trip for the
version registry)."""

from __future__ import annotations

from dataclasses import dataclass, field

from annotation.rules import TAU_THRESHOLD
from metrics.learned.config import (
    BATCH_SIZE_MAX,
    CORPUS_SOURCES_MAX,
    DEFAULT_ENCODER,
    EPOCHS_MAX,
    LAYERS_MAX,
    MAX_LENGTH_MAX,
    MAX_TOKENS,
    PRECISIONS,
    PROFILES,
    SEED_MAX,
    SEED_MIN,
    ConfigError,
    LearnedConfig,
    Rule,
)

REFERENCE_FREE_SIGNALS: tuple[str, ...] = ("self_bleu", "fkgl", "cosine", "compression", "pomme")
"""Stage 1 (and 2) signals, computed from the complex sentence and the output alone."""
REFERENCE_BASED_SIGNALS: tuple[str, ...] = ("sari", "bleu", "bertscore")
"""Stage 2 signals, against the references of the source other than the output itself."""
ENCODER_SIGNALS: tuple[str, ...] = ("cosine", "bertscore")
"""The signals computed with REFEREE's own encoder (before training); the others need only the texts."""
STAGE2_DATA: tuple[str, ...] = ("corpus", "outputs", "both")
"""What stage 2 may read (``RefereeConfig.stage2_data``)."""
HUMAN_SIGNAL = "human"
"""Stage 3 head (z-scored human ratings): the head that scores."""
ALL_SIGNALS: tuple[str, ...] = (*REFERENCE_FREE_SIGNALS, *REFERENCE_BASED_SIGNALS, HUMAN_SIGNAL)


def _int(minimum: int, maximum: int, *, optional: bool = False, hint: str | None = None) -> Rule:
    return Rule("int", minimum=minimum, maximum=maximum, optional=optional, hint=hint)


def _rate(*, optional: bool = False) -> Rule:
    return Rule("float", minimum=0, above=True, optional=optional)


@dataclass(frozen=True)
class RefereeConfig(LearnedConfig):
    """How a REFEREE version is trained.

    ``stages`` is a subset of (1, 2, 3) that includes 3 (the stage ablation of the paper's Table 5): 1 =
    synthetic pre-training on the reference-free signals, 2 = adds the reference-based ones, 3 = fine-tuning
    on human ratings. ``encoder_lr`` is the encoder's learning rate in stage 3 and ``pretrain_encoder_lr`` its
    rate in stages 1 and 2 (None: ``encoder_lr``); the paper uses one rate per stage (see experiments/README.md
    for how the defaults were chosen). ``max_sources`` caps the synthetic corpus (0: all of it),
    ``degraded_fraction`` is the share of synthetic outputs that are degraded copies
    (``metrics.referee.data.degrade``).
    ``stage2_data`` is what stage 2 reads: ``"corpus"`` (the synthetic corpus again, as stage 1), ``"outputs"``
    (the outputs of the rated campaigns' training sources against their references, and degraded copies: the
    paper's stage 2 reads systems' outputs on the test sets of reference corpora, not stage 1's data), or
    ``"both"``; ``stage2_epochs`` its epochs (None: ``synthetic_epochs``).
    ``heldout_fraction`` of the rated sources select the fine-tuning epoch (0: the last epoch is kept).
    ``rank_weight`` adds LENS's within-source ranking term to stage 3's squared error (0: the paper's loss);
    stage 3's batches then hold outputs of one source, so its pairs are the ones the tau-like compares.
    ``aspect`` is the rating stage 3 fine-tunes on: None for overall ratings (Rank & Rate's z-scores), or one
    aspect of multi-aspect campaigns (Simplicity-DA's ``fluency``, ``meaning``, ``simplicity``), its mean
    z-score per output: the paper fine-tunes on each specific rating separately (its Tables 3 and 4). Such
    ratings have no tau-like, so the fine-tuning epoch is chosen on the held-out loss.
    ``max_length`` caps the tokens of the joined "complex [SEP] output" (the encoder's own limit applies too).
    ``precision`` is the autocast of training and held-out scoring (LENS's rule: on CUDA "auto" is bf16 where
    supported; the CPU runs fp32 unless "bf16"); ``profile`` is "cpu" (these defaults) or "research" (see
    ``metrics.learned.research``, which sets "auto" on a CUDA device).
    """

    encoder: str = field(default=DEFAULT_ENCODER, metadata={"rule": Rule("str", maximum=500)})
    max_length: int = field(default=MAX_TOKENS, metadata={"rule": _int(2, MAX_LENGTH_MAX)})
    stages: tuple[int, ...] = field(default=(1, 2, 3), metadata={"rule": Rule(
        "ints", minimum=1, maximum=3, max_items=3,
        hint="a subset of 1, 2, 3 that includes 3 (fine-tuning on ratings)")})
    synthetic_epochs: int = field(default=1, metadata={"rule": _int(1, EPOCHS_MAX)})
    stage2_data: str = field(default="corpus", metadata={"rule": Rule("str", choices=STAGE2_DATA)})
    stage2_epochs: int | None = field(default=None, metadata={"rule": _int(
        1, EPOCHS_MAX, optional=True, hint=f"null (synthetic_epochs) or from 1 to {EPOCHS_MAX}")})
    finetune_epochs: int = field(default=6, metadata={"rule": _int(1, EPOCHS_MAX)})
    batch_size: int = field(default=16, metadata={"rule": _int(2, BATCH_SIZE_MAX)})
    encoder_lr: float = field(default=5e-5, metadata={"rule": _rate()})
    pretrain_encoder_lr: float | None = field(default=2e-5, metadata={"rule": _rate(optional=True)})
    head_lr: float = field(default=1e-3, metadata={"rule": _rate()})
    trainable_layers: int | None = field(default=None, metadata={"rule": _int(0, LAYERS_MAX, optional=True)})
    max_sources: int = field(default=0, metadata={"rule": _int(
        0, CORPUS_SOURCES_MAX, hint=f"0 (all) or a positive integer up to {CORPUS_SOURCES_MAX}")})
    degraded_fraction: float = field(default=0.4, metadata={"rule": Rule("float", minimum=0, maximum=1, below=True)})
    heldout_fraction: float = field(default=0.1, metadata={"rule": Rule("float", minimum=0, maximum=1, below=True)})
    rank_weight: float = field(default=0.0, metadata={"rule": Rule(
        "float", minimum=0, hint="0 (the paper's loss) or positive")})
    aspect: str | None = field(default=None, metadata={"rule": Rule(
        "str", optional=True, hint="null (overall ratings) or an aspect name, e.g. \"simplicity\"")})
    seed: int = field(default=0, metadata={"rule": Rule("int", minimum=SEED_MIN, maximum=SEED_MAX)})
    tau_threshold: float = field(default=TAU_THRESHOLD, metadata={"rule": Rule("float", minimum=0, maximum=100)})
    device: str | None = field(default=None, metadata={"rule": Rule("str", optional=True, settable=False)})
    precision: str = field(default="fp32", metadata={"rule": Rule("str", choices=PRECISIONS)})
    profile: str = field(default="cpu", metadata={"rule": Rule("str", choices=PROFILES)})

    def validate(self) -> None:
        stages = tuple(sorted(set(self.stages)))
        if 3 not in stages:
            raise ConfigError("stages must be a subset of 1, 2, 3 that includes 3 (fine-tuning on ratings) "
                              f"(got {list(self.stages)!r})", key="stages")
        object.__setattr__(self, "stages", stages)

    @property
    def rated_aspect(self) -> str | None:
        return self.aspect

    @property
    def pretrains(self) -> bool:
        """Whether a synthetic pre-training stage (1 or 2) runs."""
        return bool({1, 2} & set(self.stages))

    @property
    def reads_corpus(self) -> bool:
        """Whether a stage reads the corpus: stage 1, and stage 2 unless it reads the rated outputs alone."""
        return 1 in self.stages or (2 in self.stages and self.stage2_data != "outputs")

    @property
    def reads_outputs(self) -> bool:
        """Whether stage 2 reads the rated campaigns' outputs (their texts and references, not their ratings)."""
        return 2 in self.stages and self.stage2_data != "corpus"

    @property
    def corpus_rows_used(self) -> int | None:
        """How many corpus rows (in order) the run trains on: None when no stage reads it, 0 for all."""
        return self.max_sources if self.reads_corpus else None
