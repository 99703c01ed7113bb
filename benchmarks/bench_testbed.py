"""Benchmark of the perturbation testbed and of POMME on CPU.

Usage::

    python benchmarks/bench_testbed.py [--sample 50] [--seed 13] [--metrics fkgl,bleu,gleu,sari,sari:lens,pomme]

Reads ASSET validation from ``$SIMPEVAL_DATA_DIR`` (rows 1500-1999, held out from POMME's default LMs)
without Django, and reports:

1. perturbations per second: every perturbation at magnitudes 0,10,...,100 of the sample's oracle texts
   (spaCy parses and the WordNet lexicon warmed first; their load times are printed separately);
2. the testbed's wall time for the sample with the given metrics (perturb + score + slopes);
3. POMME texts per second on CPU with the default n-gram LMs (built into a temporary folder if
   ``var/pomme`` has none).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from config.datasets import simpeval_data_dir  # noqa: E402
from metrics.perturb import OUT_OF_DOMAIN, REGISTRY, Context  # noqa: E402
from metrics.perturb.lexicon import verb_lexicon  # noqa: E402
from metrics.perturb.nlp import get_nlp, parse  # noqa: E402
from metrics.perturb.testbed import DEFAULT_MAGNITUDES, CorpusRow, entity_pool, run_testbed, sample_rows  # noqa: E402
from metrics.suite import Item, create_metric, create_metrics  # noqa: E402
from metrics.suite.pomme import Pomme, asset_rows, build_default, default_lm_dir  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sample", type=int, default=50)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--metrics", default="fkgl,bleu,gleu,sari,sari:lens,pomme")
    args = parser.parse_args()

    data_dir = simpeval_data_dir()
    originals, columns = asset_rows(data_dir, "valid", (1500, 2000))
    rows = [CorpusRow(1500 + i, o, tuple(c[i] for c in columns)) for i, o in enumerate(originals)]
    chosen = sample_rows(rows, sample=args.sample, seed=args.seed)

    t0 = time.perf_counter()
    get_nlp()
    t1 = time.perf_counter()
    verb_lexicon()
    t2 = time.perf_counter()
    print(f"load: spaCy {t1 - t0:.2f} s, WordNet verbs {t2 - t1:.2f} s")

    lm_dir = default_lm_dir()
    if not (lm_dir / "reference.json").is_file():
        lm_dir = build_default(data_dir, Path(tempfile.mkdtemp()) / "pomme")

    t0 = time.perf_counter()
    entities = entity_pool([t for r in chosen for t in (r.source, *r.references)])
    for r in chosen:
        for text in r.references:
            parse(text)
    t1 = time.perf_counter()
    print(f"parse {sum(1 + len(r.references) for r in chosen)} texts: {t1 - t0:.2f} s")
    rng = random.Random(args.seed)
    count = 0
    t0 = time.perf_counter()
    for r in chosen:
        oracle = r.references[rng.randrange(len(r.references))]
        context = Context(source=r.source, references=r.references, simplification=oracle,
                          in_domain=[x.references[0] for x in chosen[:5]], out_of_domain=OUT_OF_DOMAIN,
                          entities=entities)
        for name, perturbation in REGISTRY.items():
            base = r.source if name == "simplify" else oracle
            for m in DEFAULT_MAGNITUDES:
                perturbation(base, magnitude=m, seed=args.seed, context=context)
                count += 1
    elapsed = time.perf_counter() - t0
    print(f"perturbations: {count} in {elapsed:.2f} s = {count / elapsed:.0f}/s (parses cached)")

    names = [n for n in args.metrics.split(",") if n]
    metrics = create_metrics(names, {"pomme": {"lm_dir": lm_dir}})
    t0 = time.perf_counter()
    result = run_testbed(chosen, metrics, seed=args.seed)
    wall = time.perf_counter() - t0
    print(f"testbed: {len(chosen)} sources x {len(REGISTRY)} perturbations x {len(DEFAULT_MAGNITUDES)} magnitudes, "
          f"{len(names)} metrics: {wall:.1f} s wall; " + ", ".join(f"{k} {v:.1f} s" for k, v in result.seconds.items()))

    pomme = create_metric("pomme", lm_dir=lm_dir)
    assert isinstance(pomme, Pomme)
    pomme.models()
    texts = [Item(t, t) for r in rows for t in (r.source, *r.references)]
    t0 = time.perf_counter()
    pomme.score_batch(texts)
    elapsed = time.perf_counter() - t0
    print(f"pomme (n-gram, CPU): {len(texts)} texts in {elapsed:.2f} s = {len(texts) / elapsed:.0f} texts/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
