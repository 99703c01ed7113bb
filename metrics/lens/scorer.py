"""Serving boundary: load a checkpoint once, score (complex, output, references) triples."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch

from metrics.learned.checkpoint import Metadata
from metrics.learned.kinds import Scored, Triple
from metrics.lens.checkpoint import load_checkpoint
from metrics.lens.config import Precision
from metrics.lens.inference import predict_batch, resolve_device
from metrics.lens.model import IndexedBatch, LensModel
from metrics.lens.types import Prediction, ScoreInput

TripleLike = ScoreInput | tuple[str, str, Sequence[str]]


def quantize_encoder(model: LensModel) -> None:
    """Replace the encoder's ``nn.Linear`` layers with dynamically quantised int8 ones, in place (CPU)."""
    import warnings

    from torch.ao.quantization import quantize_dynamic

    model.encoder.eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)  # torch's deprecation notice of quantized tensors
        warnings.simplefilter("ignore", category=DeprecationWarning)
        quantize_dynamic(  # type: ignore[no-untyped-call]
            model.encoder, {torch.nn.Linear}, dtype=torch.qint8, inplace=True
        )


class InputTooLongError(ValueError):
    """A text exceeds the encoder's maximum length and truncation was refused."""


def validate_inputs(samples: Sequence[TripleLike]) -> list[ScoreInput]:
    """Check every triple has non-empty texts and at least one reference; returns normalised triples."""
    checked: list[ScoreInput] = []
    for position, raw in enumerate(samples):
        complex_text, output, references = raw
        if isinstance(references, str):
            raise ValueError(f"sample {position}: references must be a sequence of strings, not a string")
        refs = tuple(references)
        if not refs:
            raise ValueError(f"sample {position}: at least one reference is required")
        for label, text in [("complex", complex_text), ("output", output), *(("reference", r) for r in refs)]:
            if not isinstance(text, str) or not text.strip():
                raise ValueError(f"sample {position}: empty {label} text")
        checked.append(ScoreInput(complex_text, output, refs))
    return checked


class LensScorer:
    """A trained LENS model ready to score.

    Texts longer than the encoder's limit (``max_length`` tokens, special tokens included) are truncated
    and the prediction is flagged ``truncated=True``; pass ``truncate=False`` to ``predict`` to get an
    ``InputTooLongError`` instead.
    """

    def __init__(
        self,
        model: LensModel,
        *,
        device: torch.device,
        precision: Precision = "auto",
        metadata: Metadata | None = None,
    ) -> None:
        self.model = model.to(device).eval()
        self.device = device
        self.precision = precision
        self.metadata = metadata or {}

    @classmethod
    def load(
        cls,
        checkpoint_dir: Path | str,
        device: str | torch.device | None = None,
        precision: Precision = "auto",
        *,
        int8: bool = False,
    ) -> LensScorer:
        """Load a checkpoint directory written by ``train`` (offline).

        Args:
            checkpoint_dir: A LENS checkpoint directory (the family's format or the older ``lens_config.json``).
            device: "cpu", "cuda"...; None picks CUDA when available.
            precision: Autocast on CUDA ("auto" = bf16 where supported).
            int8: Quantise the encoder's linear layers dynamically to int8 (faster scoring on a CPU; the
                head stays fp32). CPU only: a ValueError on any other device.

        Returns:
            The scorer.
        """
        resolved = resolve_device(device)
        if int8 and resolved.type != "cpu":
            raise ValueError(f"int8 scoring quantises for the CPU; on {resolved.type} use precision 'bf16' or 'fp32'")
        model, metadata = load_checkpoint(Path(checkpoint_dir), resolved)
        if int8:
            quantize_encoder(model)
            metadata = {**metadata, "int8": True}
        return cls(model, device=resolved, precision=precision, metadata=metadata)

    @property
    def max_length(self) -> int:
        return self.model.encoder.max_length

    def score(self, items: Sequence[Triple]) -> list[Scored]:
        """The family's scoring boundary: z per item, with ``score`` (100 * Phi(z)) and ``truncated``."""
        predictions = self.predict([ScoreInput(i.complex, i.output, tuple(i.references)) for i in items])
        return [(p.z, {"score": p.score, "truncated": float(p.truncated)}) for p in predictions]

    def predict(
        self, samples: Sequence[TripleLike], batch_size: int = 32, *, truncate: bool = True
    ) -> list[Prediction]:
        """Score triples; each distinct text is encoded once per call.

        Args:
            samples: (complex, output, references) triples.
            batch_size: Texts per encoder pass.
            truncate: Truncate over-long texts (and flag them) rather than raise.

        Returns:
            One ``Prediction`` per triple, in order: ``z`` = max over references, ``score`` = 100 * Phi(z).
        """
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        triples = validate_inputs(samples)
        if not triples:
            return []
        batch = IndexedBatch.build([(t.complex, t.output, t.references) for t in triples])
        lengths = self.model.encoder.token_lengths(batch.texts)
        too_long = {text for text, n in zip(batch.texts, lengths, strict=True) if n > self.max_length}
        if too_long and not truncate:
            example = min(too_long, key=len)
            raise InputTooLongError(
                f"{len(too_long)} text(s) exceed {self.max_length} tokens, e.g. {example[:80]!r}..."
            )
        matrix = predict_batch(self.model, batch, encode_batch_size=batch_size, precision=self.precision,
                               lengths=lengths)
        predictions = []
        for row, triple in enumerate(triples):
            values = matrix[row, : len(triple.references)].tolist()
            cut = bool(too_long) and any(t in too_long for t in (triple.complex, triple.output, *triple.references))
            predictions.append(Prediction.from_per_reference(values, truncated=cut))
        return predictions
