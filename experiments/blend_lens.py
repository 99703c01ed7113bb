"""LENS as a component of the blend experiment (issue 47, third configuration): out-of-fold LENS scores of the
blend's training outputs, and a LENS trained on all of them for the test sets.

LENS is trained as ``train_lens`` trains it by default (``TrainConfig()``: the bundled MiniLM, frozen, every
one of 20 epochs on its cached pooled states, head 1024/256, rank_weight 10, the checkpoint chosen on 10% of
the training sources held out) on SimpEval_past with its ten ASSET references, as the product's campaign has
them. Every distinct text is encoded once (:class:`metrics.lens.training.FeatureCache`); every run reuses it.

Scores are written to the blend experiment's cache (``blend_experiment.cache_file``), under the component
name ``lens_<context>``:

* ``select``: out-of-fold scores of every SimpEval_past training output, on the selection's folds
  (``metrics.blend.learners.grouped_folds`` of its sources, 5 folds, seed 0): each fold's outputs are scored
  by a LENS trained on the other four folds' sources. Computed under the selection guard (no test text is
  encoded: the features of SimpEval_past's texts are their own file).
* ``seed<s>`` (s = 0, 1, 2): the same over the seed's 90% of the sources (``split_heldout``, as the blend's
  evaluation holds them out), on the blend's own cross-validation folds of that seed; and a LENS trained on
  all of the seed's training sources scores the test sets (files ``test-...``) and the seed's held-out 10%.

Stacking caveat: within the blend's cross-validation, the training rows' out-of-fold scores come from LENS
models that saw the held-out fold's sources (only the held-out rows' own scores are clean of them), as usual
in stacked generalisation.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from metrics.lens.types import Sample

LENS_FOLDS = 5
"""Folds of the out-of-fold LENS scores (the blend's CV folds)."""
LENS_SIGNATURE = "lens-cpu-default|minilm|rank_weight:10|epochs:20|frozen|oof:5"
"""The LENS component's signature in the cache (a change of recipe needs a new one)."""
PAST_FEATURES = "past--lens-features.pt"
TEST_FEATURES = "test-lens-features.pt"


def lens_config(seed: int) -> Any:
    """``train_lens``'s defaults on the CPU, with the seed (no other option set)."""
    from metrics.lens.config import TrainConfig

    return TrainConfig(seed=seed, device="cpu", progress_every=10_000)


def ten_reference_past(root: Path) -> list[Sample]:
    """SimpEval_past as LENS trains on it: every output with its source's ten ASSET references."""
    from experiments.datasets import load_simpeval_past

    return load_simpeval_past(root)


def features(cache: Path, texts: Sequence[str], *, test: bool) -> Any:
    """The frozen encoder's pooled states of ``texts`` (computed once; ``test``: the file that may hold test
    texts, whose name the selection guard refuses)."""
    from metrics.lens.encoders import encoder_class
    from metrics.lens.model import LensModel
    from metrics.lens.training import FeatureCache

    config = lens_config(0)
    path = cache / (TEST_FEATURES if test else PAST_FEATURES)
    source = path if path.is_file() else (cache / PAST_FEATURES if test and (cache / PAST_FEATURES).is_file()
                                          else None)
    stored = FeatureCache.load(source) if source is not None else None
    if stored is not None and all(t in stored for t in texts):
        return stored
    encoder = encoder_class("hf").from_pretrained(config.model.encoder, max_length=config.model.max_length)
    model = LensModel(config.model, encoder).eval()
    if stored is None:
        stored = FeatureCache.build(model, list(texts), config)
    else:
        stored.extend(model, list(texts), config)
    stored.save(path)
    return stored


def train_lens_model(pool: Sequence[Sample], seed: int, lookup: Any) -> tuple[Any, dict[str, Any]]:
    """A LENS trained as ``train_lens`` trains it on ``pool`` (10% of its sources held out for the checkpoint)."""
    import tempfile

    from experiments.datasets import split_heldout
    from metrics.lens.training import Trainer

    train, heldout = split_heldout(pool, 0.1, seed)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        trainer = Trainer(lens_config(seed), out_dir=Path(tmp), features=lookup)
        result = trainer.fit(train, heldout)
        trainer.restore_best()
    return trainer.model, {"seconds": time.perf_counter() - started, "best_epoch": result.best_epoch,
                           "heldout_tau": result.heldout.get("tau", {}).get("all"), "device": result.device,
                           "train": len(train), "heldout": len(heldout)}


def lens_scores(model: Any, lookup: Any, items: Sequence[Any]) -> list[float]:
    """The model's max-over-references scores of items (complex, output, references)."""
    from metrics.lens.inference import predict_batch
    from metrics.lens.loss import max_over_references
    from metrics.lens.model import IndexedBatch

    batch = IndexedBatch.build([(i.complex, i.output, tuple(i.references)) for i in items])
    matrix = predict_batch(model, batch, encode_batch_size=32, precision="fp32", lookup=lookup)
    return [float(v) for v in max_over_references(matrix, batch.ref_mask).tolist()]


def out_of_fold(past10: Sequence[Sample], items: Sequence[Sample], *, seed: int, fold_seed: int, lookup: Any,
                folds: int = LENS_FOLDS) -> tuple[list[float], list[dict[str, Any]]]:
    """Each of ``items`` scored by a LENS trained on the other folds' sources (``grouped_folds`` of the items'
    sources, shuffled by ``fold_seed``, as the blend's CV cuts them); LENS trains on ``past10``'s outputs of
    those sources."""
    from metrics.blend.learners import grouped_folds

    values = [0.0] * len(items)
    runs = []
    for number, (train_rows, held_rows) in enumerate(grouped_folds([s.source_id for s in items], folds, fold_seed)):
        sources = {items[int(i)].source_id for i in train_rows}
        model, run = train_lens_model([s for s in past10 if s.source_id in sources], seed, lookup)
        held = [items[int(i)] for i in held_rows]
        for i, value in zip(held_rows, lens_scores(model, lookup, held), strict=True):
            values[int(i)] = value
        runs.append({"fold": number, **run})
        print(f"  lens fold {number}: {run['train']} train / {run['heldout']} checkpoint outputs, best epoch "
              f"{run['best_epoch']}, held-out tau {run['heldout_tau']}, {run['seconds']:.0f}s", flush=True)
    return values, runs


def write_scores(cache: Path, dataset: str, context: str, items: Sequence[Any], values: Sequence[float],
                 runs: Sequence[dict[str, Any]]) -> None:
    from experiments.blend_experiment import _key, cache_file

    table: dict[str, float] = {}
    for item, value in zip(items, values, strict=True):
        table[_key(item.complex, item.output, item.references)] = value  # a repeated output: one key, one fold
    cache_file(cache, dataset, f"lens_{context}").write_text(json.dumps(
        {"signature": LENS_SIGNATURE, "scores": table, "runs": list(runs)}))


def selection_scores(root: Path, cache: Path, *, folds: int = LENS_FOLDS, fold_seed: int = 0) -> None:
    """Out-of-fold LENS scores of every blend training output on the selection's folds; runs under the
    selection guard."""
    from experiments.blend_experiment import no_test_sets, training_samples

    with no_test_sets():
        items, past10 = training_samples(root), ten_reference_past(root)
        lookup = features(cache, [t for s in (*past10, *items) for t in (s.complex, s.output, *s.references)],
                          test=False)
        started = time.perf_counter()
        values, runs = out_of_fold(past10, items, seed=fold_seed, fold_seed=fold_seed, lookup=lookup, folds=folds)
        write_scores(cache, "past", "select", items, values, runs)
    print(f"lens select: {len(runs)} models in {time.perf_counter() - started:.0f}s", flush=True)


def seed_scores(root: Path, cache: Path, seed: int, tests: dict[str, Sequence[Any]]) -> None:
    """One seed's out-of-fold scores on its 90% of the sources, and the scores of a LENS trained on all of
    them for the seed's held-out 10% and the test sets (``tests``: dataset name -> items)."""
    from experiments.blend_experiment import training_samples
    from experiments.datasets import split_heldout

    items_all, past10 = training_samples(root), ten_reference_past(root)
    train, held = split_heldout(items_all, 0.1, seed)
    texts = [t for s in (*past10, *items_all) for t in (s.complex, s.output, *s.references)]
    texts += [t for rows in tests.values() for r in rows for t in (r.complex, r.output, *r.references)]
    lookup = features(cache, texts, test=True)
    started = time.perf_counter()
    values, runs = out_of_fold(past10, train, seed=seed, fold_seed=seed, lookup=lookup)
    write_scores(cache, "past", f"seed{seed}", train, values, runs)
    sources = {s.source_id for s in train}
    model, run = train_lens_model([s for s in past10 if s.source_id in sources], seed, lookup)
    print(f"  lens all training sources: best epoch {run['best_epoch']}, held-out tau {run['heldout_tau']}, "
          f"{run['seconds']:.0f}s", flush=True)
    write_scores(cache, "past", f"seed{seed}_heldout", held, lens_scores(model, lookup, held), [run])
    for dataset, rows in tests.items():
        write_scores(cache, dataset, f"seed{seed}", rows, lens_scores(model, lookup, rows), [run])
    print(f"lens seed {seed}: {len(runs) + 1} models in {time.perf_counter() - started:.0f}s", flush=True)
