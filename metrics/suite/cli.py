"""``python -m metrics.suite``: score JSONL files with suite metrics, without Django.

``score --metric sari,fkgl --input items.jsonl --out scored.jsonl`` reads one JSON object per line
(``complex``, ``output``, ``references``; other fields are kept), adds ``"scores": {metric: {"value",
"components"}}`` and prints each metric's signature and mean to stderr.  ``list`` prints the metric
names with their signatures.  Bad input exits with status 2 and a message naming the file and line.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from tqdm import tqdm

from metrics.suite.base import Item, Metric, MetricError, Score
from metrics.suite.registry import available_metrics, create_metric

CHUNK = 256
PROGRESS_FROM = 1000
"""Show a progress bar from this many items."""


def read_jsonl(path: Path) -> tuple[list[dict[str, Any]], list[Item], list[str]]:
    """Records, items and their labels (``"FILE line N"``); raises :class:`MetricError` on bad lines."""
    records: list[dict[str, Any]] = []
    items: list[Item] = []
    labels: list[str] = []
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise MetricError(f"cannot read {path}: {exc.strerror}") from None
    with handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"{path} line {number}"
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise MetricError(f"{where}: invalid JSON ({exc.msg})") from None
            items.append(Item.from_mapping(record, where=where))
            records.append(record)
            labels.append(where)
    if not items:
        raise MetricError(f"{path}: no items (expected one JSON object per line)")
    return records, items, labels


def _parse_options(pairs: Sequence[str]) -> dict[str, dict[str, Any]]:
    options: dict[str, dict[str, Any]] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        family, dot, name = key.partition(".")
        if not sep or not dot or not family or not name:
            raise MetricError(f"--option {pair!r}: expected FAMILY.NAME=VALUE, e.g. bertscore.model=/models/roberta")
        value: Any = raw
        if raw.lstrip("-").isdigit():
            value = int(raw)
        elif raw.lower() in {"true", "false"}:
            value = raw.lower() == "true"
        options.setdefault(family, {})[name] = value
    return options


def score_items(
    metric: Metric, items: Sequence[Item], labels: Sequence[str], *, progress: bool = True, allow_empty: bool = False
) -> list[Score]:
    """Validate all items first (so bad input fails before any work), then score in chunks."""
    metric.validate(items, labels=labels, allow_empty=allow_empty)
    scores: list[Score] = []
    with tqdm(
        total=len(items), desc=metric.name, unit="out", disable=not progress or len(items) < PROGRESS_FROM
    ) as bar:
        for start in range(0, len(items), CHUNK):
            chunk = items[start : start + CHUNK]
            scores.extend(metric.score_batch(chunk, labels=labels[start : start + CHUNK], allow_empty=allow_empty))
            bar.update(len(chunk))
    return scores


def _cmd_score(args: argparse.Namespace, err: TextIO) -> int:
    names = [name.strip() for name in args.metric.split(",") if name.strip()]
    if not names:
        raise MetricError("--metric: give at least one metric name")
    options = _parse_options(args.option or [])
    expanded = [each for name in names for each in (available_metrics() if name == "all" else [name])]
    metrics = [create_metric(name, **options.get(name.partition(":")[0], {})) for name in expanded]
    records, items, labels = read_jsonl(Path(args.input))
    for metric in metrics:
        metric.validate(items, labels=labels, allow_empty=args.allow_empty)
    for metric in metrics:
        scores = score_items(metric, items, labels, progress=not args.quiet, allow_empty=args.allow_empty)
        for record, score in zip(records, scores, strict=True):
            record.setdefault("scores", {})[metric.name] = score.to_dict()
        mean = sum(s.value for s in scores) / len(scores)
        line = f"{metric.name}\tmean={mean:.4f}\tn={len(scores)}\t{metric.signature}"
        corpus = getattr(metric, "corpus_score", None)
        if callable(corpus):
            line += f"\n{metric.name} (corpus)\t{corpus(items).value:.4f}\t{metric.corpus_signature}"  # type: ignore[attr-defined]
        print(line, file=err)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            _write_jsonl(handle, records)
    else:
        _write_jsonl(sys.stdout, records)
    return 0


def _write_jsonl(handle: TextIO, records: Sequence[dict[str, Any]]) -> None:
    for record in records:
        handle.write(json.dumps(record, ensure_ascii=False) + "\n")


def _cmd_list(args: argparse.Namespace, err: TextIO) -> int:
    for name in available_metrics():
        metric = create_metric(name)
        refs = "needs references" if metric.needs_references else "no references"
        print(f"{name}\t{refs}\t{'higher' if metric.higher_is_better else 'lower'} is better\t{metric.signature}")
    return 0


def _cmd_pomme_build(args: argparse.Namespace, err: TextIO) -> int:
    from metrics.suite.pomme import build_default, default_lm_dir

    out = build_default(Path(args.data_dir), Path(args.out) if args.out else default_lm_dir())
    print(f"pomme: n-gram language models and z-reference written to {out}", file=err)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m metrics.suite", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    score = sub.add_parser("score", help="score a JSONL file of {complex, output, references} items")
    score.add_argument("--metric", required=True, help="comma-separated names, e.g. sari,sari:lens,fkgl (or all)")
    score.add_argument("--input", required=True, help="JSONL file, one item per line")
    score.add_argument("--out", help="where to write the scored JSONL (default: standard output)")
    score.add_argument(
        "--option", action="append", metavar="FAMILY.NAME=VALUE", help="metric option, e.g. bertscore.model=PATH"
    )
    score.add_argument("--quiet", action="store_true", help="no progress bar")
    score.add_argument("--allow-empty", action="store_true", help="score empty outputs instead of refusing them")
    score.set_defaults(handler=_cmd_score)
    listing = sub.add_parser("list", help="list the metrics and their signatures")
    listing.set_defaults(handler=_cmd_list)
    build = sub.add_parser("pomme-build", help="train POMME's default n-gram LMs on ASSET validation")
    build.add_argument("--data-dir", required=True, help="the released data folder (holding asset/)")
    build.add_argument("--out", help="where to write them (default: $POMME_LM_DIR or var/pomme)")
    build.set_defaults(handler=_cmd_pomme_build)
    return parser


def main(argv: Sequence[str] | None = None, *, err: TextIO | None = None) -> int:
    stream = err or sys.stderr
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args, stream))
    except MetricError as exc:
        print(f"error: {exc}", file=stream)
        return 2
    except TypeError as exc:  # a metric given an option it does not take
        print(f"error: {exc}", file=stream)
        return 2
