"""Public entry points: :func:`analyze`, :func:`analyze_many`, :func:`apply_edits`."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from .alignment import Alignment, add_embedding_pairs, lexical_alignment, needs_embeddings
from .categorize import DEFAULT_RULE, Rule, categorize
from .edits import build_edits, rebuild_tokens
from .features import compute_features
from .models import FloatArray, get_encoder, get_nlp
from .text import TextInfo, Token, match_key, text_info
from .types import Analysis, Edit
from .version import DEGRADED_SUFFIX, ENGINE_VERSION

MAX_CHARS = 20_000
MAX_TOKENS = 1_000
PIPE_BATCH_SIZE = 64

logger = logging.getLogger(__name__)


def _error(message: str) -> Analysis:
    return Analysis(
        category="paraphrase",
        reasons={"rule": "not analysed", "error": message},
        edits=[],
        features={},
        engine_version=ENGINE_VERSION,
        error=message,
    )


def _validate(source: Any, output: Any) -> str | None:
    if not isinstance(source, str) or not isinstance(output, str):
        return "source and output must both be strings"
    if not source.strip():
        return "source text is empty"
    longest = max(len(source), len(output))
    if longest > MAX_CHARS:
        return f"text too long to analyse ({longest} characters > {MAX_CHARS})"
    return None


def _parse(texts: list[str]) -> dict[str, TextInfo | str]:
    """Parse each distinct text once; a text that fails maps to an error message."""
    nlp = get_nlp()
    parsed: dict[str, TextInfo | str] = {}
    try:
        for text, doc in zip(texts, nlp.pipe(texts, batch_size=PIPE_BATCH_SIZE), strict=True):
            parsed[text] = text_info(doc)
    except Exception:  # retry one by one to isolate the bad text
        logger.exception("batched parse failed; parsing texts one by one")
        for text in texts:
            if text in parsed:
                continue
            try:
                parsed[text] = text_info(nlp(text))
            except Exception as exc:
                parsed[text] = f"could not parse text: {exc}"
    for text, info in parsed.items():
        if isinstance(info, TextInfo) and len(info.tokens) > MAX_TOKENS:
            parsed[text] = f"text too long to analyse ({len(info.tokens)} tokens > {MAX_TOKENS})"
    return parsed


def _embed(infos: list[TextInfo]) -> dict[str, FloatArray] | None:
    """Token vectors per text; None when the encoder failed (the caller marks those analyses degraded)."""
    if not infos:
        return {}
    try:
        vectors = get_encoder().encode(
            [i.text for i in infos], [[(t.start, t.end) for t in i.tokens] for i in infos]
        )
    except Exception:
        logger.exception("token encoder failed; aligning without embeddings (results marked degraded)")
        return None
    return {info.text: vec for info, vec in zip(infos, vectors, strict=True)}


def _finish(
    src: TextInfo,
    out: TextInfo,
    alignment: Alignment,
    compression_threshold: float,
    rule: Rule,
    degraded: bool,
) -> Analysis:
    edits = build_edits(src, out, alignment)
    features = compute_features(src, out, alignment)
    category, reasons = categorize(
        features, compression_threshold=compression_threshold, rule=rule
    )
    return Analysis(
        category=category,
        reasons=reasons,
        edits=edits,
        features=features,
        engine_version=ENGINE_VERSION + DEGRADED_SUFFIX if degraded else ENGINE_VERSION,
        error=None,
        degraded=degraded,
    )


def analyze_many(
    pairs: Sequence[tuple[str, str]],
    *,
    compression_threshold: float = 0.5,
    rule: Rule = DEFAULT_RULE,
) -> list[Analysis]:
    """Analyse many (source, output) pairs in one batch.

    Each distinct text is parsed once (``nlp.pipe``) and embedded at most once
    (batched, only when the lexical alignment leaves changed content words to
    pair up). A bad pair yields an :class:`Analysis` with ``error`` set; no
    exception escapes for a single pair. When the encoder fails, the pairs that
    needed it are aligned lexically and marked ``degraded``.

    Args:
        pairs: ``(source, output)`` tuples.
        compression_threshold: see :func:`~annotation.analysis.categorize.categorize`.
        rule: ``"refined"`` (default) or ``"paper"``.

    Returns:
        One :class:`Analysis` per pair, in order.
    """
    results: list[Analysis | None] = [None] * len(pairs)
    todo: list[int] = []
    for k, pair in enumerate(pairs):
        try:
            source, output = pair
            problem = _validate(source, output)
        except (TypeError, ValueError):
            problem = "each pair must be a (source, output) tuple of strings"
        if problem:
            results[k] = _error(problem)
        else:
            todo.append(k)

    texts = sorted({text for k in todo for text in pairs[k]})
    parsed = _parse(texts)

    staged: dict[int, tuple[TextInfo, TextInfo, Alignment]] = {}
    wants_vectors: set[int] = set()
    to_embed: dict[str, TextInfo] = {}
    for k in todo:
        source, output = pairs[k]
        src, out = parsed[source], parsed[output]
        if isinstance(src, str) or isinstance(out, str):
            results[k] = _error(src if isinstance(src, str) else str(out))
            continue
        try:
            alignment = lexical_alignment(src, out)
        except Exception as exc:
            logger.exception("alignment failed")
            results[k] = _error(f"alignment failed: {exc}")
            continue
        staged[k] = (src, out, alignment)
        if needs_embeddings(src, out, alignment):
            wants_vectors.add(k)
            to_embed[src.text] = src
            to_embed[out.text] = out

    vectors = _embed([to_embed[t] for t in sorted(to_embed)])
    for k, (src, out, alignment) in staged.items():
        try:
            degraded = vectors is None and k in wants_vectors
            if vectors is not None and src.text in vectors and out.text in vectors:
                add_embedding_pairs(src, out, alignment, vectors[src.text], vectors[out.text])
            results[k] = _finish(src, out, alignment, compression_threshold, rule, degraded)
        except Exception as exc:
            logger.exception("analysis failed")
            results[k] = _error(f"analysis failed: {exc}")
    return [r if r is not None else _error("not analysed") for r in results]


def analyze(
    source: str, output: str, *, compression_threshold: float = 0.5, rule: Rule = DEFAULT_RULE
) -> Analysis:
    """Analyse one (source, output) pair; see :func:`analyze_many`."""
    return analyze_many(
        [(source, output)], compression_threshold=compression_threshold, rule=rule
    )[0]


def tokenize(text: str) -> list[Token]:
    """The engine's tokens of ``text`` (spaCy tokenizer, whitespace dropped)."""
    doc = get_nlp().make_doc(text)
    return [
        Token(
            text=t.text,
            start=t.idx,
            end=t.idx + len(t.text),
            key=match_key(t.text),
            lemma=match_key(t.text),
            is_punct=False,
            is_stop=False,
            sent=0,
        )
        for t in doc
        if not t.is_space
    ]


def token_keys(text: str) -> list[str]:
    """Matching keys of the engine's tokens of ``text``."""
    return [t.key for t in tokenize(text)]


def apply_edits(source: str, output: str, edits: Sequence[Edit]) -> list[str]:
    """Apply ``edits`` to ``source``; equals ``token_keys(output)`` when faithful.

    Kept tokens are taken from the source; only the text of paraphrase spans is
    read from the output (see :mod:`annotation.analysis.edits`).
    """
    return rebuild_tokens(tokenize(source), tokenize(output), edits)
