"""REFEREE's options: one flat, validated dataclass (JSON round trip for the version registry)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from metrics.lens.config import DEFAULT_ENCODER, MAX_TOKENS

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


class RefereeConfigError(ValueError):
    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key = key


@dataclass(frozen=True)
class RefereeConfig:
    """How a REFEREE version is trained.

    ``stages`` is a subset of (1, 2, 3) that includes 3 (the stage ablation of the paper's Table 5): 1 =
    synthetic pre-training on the reference-free signals, 2 = adds the reference-based ones, 3 = fine-tuning
    on human ratings. ``encoder_lr`` is the encoder's learning rate in stage 3 and ``pretrain_encoder_lr`` its
    rate in stages 1 and 2 (None: ``encoder_lr``); the paper uses one rate per stage. The defaults (5e-5 for
    6 fine-tuning epochs, 2e-5 before) are the schedule measured best for MiniLM on a CPU in issue 16: over 3
    seeds of fine-tuning only it raised SimpEval_2022 tau_all from 0.078 (2e-5 for 3 epochs) to 0.131.
    With all-mpnet-base-v2 (five times MiniLM's size) trained whole, 2e-5 in fine-tuning only gave 0.240 ±
    0.052 over nine runs (five seeds on a GPU, four on 2 CPU cores), the paper's fine-tuning-only 0.242, and
    with all three stages 0.264 ± 0.026 over two seeds on a GPU, under the paper's 0.360 (README).
    ``max_sources`` caps the synthetic corpus (0: all of it), ``degraded_fraction`` is the
    share of synthetic outputs that are degraded copies (``metrics.referee.data.degrade``).
    ``stage2_data`` is what stage 2 reads: ``"corpus"`` (the synthetic corpus again, as stage 1), ``"outputs"``
    (the outputs of the rated campaigns' training sources against their references, and degraded copies: the
    paper's stage 2 reads systems' outputs on the test sets of reference corpora, not stage 1's data), or
    ``"both"``; ``stage2_epochs`` its epochs (None: ``synthetic_epochs``).
    ``heldout_fraction`` of the rated sources select the fine-tuning epoch (0: the last epoch is kept); over
    5 seeds of fine-tuning only, 0.1 gave SimpEval_2022 tau_all 0.126, the last epoch 0.116 and 0.25 0.069.
    ``rank_weight`` adds LENS's within-source ranking term to stage 3's squared error (0: the paper's loss);
    stage 3's batches then hold outputs of one source, so its pairs are the ones the tau-like compares.
    ``aspect`` is the rating stage 3 fine-tunes on: None for overall ratings (Rank & Rate's z-scores), or one
    aspect of multi-aspect campaigns (Simplicity-DA's ``fluency``, ``meaning``, ``simplicity``), its mean
    z-score per output: the paper fine-tunes on each specific rating separately (its Tables 3 and 4). Such
    ratings have no tau-like, so the fine-tuning epoch is chosen on the held-out loss.
    ``max_length`` caps the tokens of the joined "complex [SEP] output" (the encoder's own limit applies too).
    The former 128 cut the end of the output off 44 of SimpEval_2022's 360 pairs (no training pair of
    SimpEval_past or ASSET validation but 16 of 20,000 is that long); read whole, the same checkpoints gained
    0.018 in tau_all over 5 seeds of fine-tuning only and 0.021 over 2 default seeds (issue 16's note).
    """

    encoder: str = DEFAULT_ENCODER
    max_length: int = MAX_TOKENS
    stages: tuple[int, ...] = (1, 2, 3)
    synthetic_epochs: int = 1
    stage2_data: str = "corpus"
    stage2_epochs: int | None = None
    finetune_epochs: int = 6
    batch_size: int = 16
    encoder_lr: float = 5e-5
    pretrain_encoder_lr: float | None = 2e-5
    head_lr: float = 1e-3
    trainable_layers: int | None = None
    max_sources: int = 0
    degraded_fraction: float = 0.4
    heldout_fraction: float = 0.1
    rank_weight: float = 0.0
    aspect: str | None = None
    seed: int = 0
    tau_threshold: float = 5.0
    device: str | None = None

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

    def __post_init__(self) -> None:
        stages = tuple(sorted(set(int(s) for s in self.stages)))
        if not set(stages) <= {1, 2, 3} or 3 not in stages:
            raise RefereeConfigError("stages", "a subset of 1, 2, 3 that includes 3 (fine-tuning on ratings)")
        object.__setattr__(self, "stages", stages)
        for key in ("max_length", "batch_size"):
            if int(getattr(self, key)) < 2:
                raise RefereeConfigError(key, "must be at least 2")
        for key in ("synthetic_epochs", "finetune_epochs"):
            if int(getattr(self, key)) < 1:
                raise RefereeConfigError(key, "must be at least 1")
        if self.stage2_epochs is not None and int(self.stage2_epochs) < 1:
            raise RefereeConfigError("stage2_epochs", "must be null (synthetic_epochs) or at least 1")
        if self.stage2_data not in STAGE2_DATA:
            raise RefereeConfigError("stage2_data", f"one of {', '.join(map(repr, STAGE2_DATA))}")
        if self.max_sources < 0:
            raise RefereeConfigError("max_sources", "must be 0 (all) or positive")
        if not 0.0 <= self.degraded_fraction < 1.0:
            raise RefereeConfigError("degraded_fraction", "must be in [0, 1)")
        if not 0.0 <= self.heldout_fraction < 1.0:
            raise RefereeConfigError("heldout_fraction", "must be in [0, 1)")
        if self.encoder_lr <= 0 or self.head_lr <= 0:
            raise RefereeConfigError("encoder_lr", "learning rates must be positive")
        if self.pretrain_encoder_lr is not None and self.pretrain_encoder_lr <= 0:
            raise RefereeConfigError("pretrain_encoder_lr", "must be null (encoder_lr) or positive")
        if not self.rank_weight >= 0.0:
            raise RefereeConfigError("rank_weight", "must be 0 (the paper's loss) or positive")
        if self.aspect is not None and (not isinstance(self.aspect, str) or not self.aspect.strip()):
            raise RefereeConfigError("aspect", "null (overall ratings) or an aspect name, e.g. \"simplicity\"")
        if self.trainable_layers is not None and self.trainable_layers < 0:
            raise RefereeConfigError("trainable_layers", "must be null (all) or >= 0")

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["stages"] = list(self.stages)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RefereeConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise RefereeConfigError(unknown[0], f"unknown REFEREE option; known: {', '.join(sorted(known))}")
        values = dict(data)
        if "stages" in values:
            raw = values["stages"]
            if not isinstance(raw, list | tuple) or not all(isinstance(s, int) for s in raw):
                raise RefereeConfigError("stages", "a list of stage numbers, e.g. [1, 2, 3]")
            values["stages"] = tuple(raw)
        try:
            return cls(**values)
        except TypeError as exc:
            raise RefereeConfigError("options", str(exc)) from None
