"""`experiments/referee_table3.py`: the paper's 4-1-1 runs over Simplicity-DA's sources, and one REFEREE run
fine-tuned on an aspect, on the tiny encoder."""

from __future__ import annotations

import math
import random
from pathlib import Path
from types import ModuleType

import pytest
import torch

from experiments import referee_table3
from experiments.datasets import AspectRated
from tests.tiny import WORDS


def _script() -> ModuleType:
    return referee_table3


def _rows(n_sources: int, seed: int = 0) -> list[AspectRated]:
    rng = random.Random(seed)
    rows = []
    for s in range(n_sources):
        words = [rng.choice(WORDS) for _ in range(10)]
        for quality, system in ((1.0, "good"), (-1.0, "poor")):
            z = {a: quality + rng.uniform(-0.3, 0.3) for a in ("fluency", "meaning", "simplicity")}
            rows.append(AspectRated(source_id=f"s{s}", system=system, complex=" ".join(words),
                                    output=" ".join(words[: 7 + int(quality)]), references=(" ".join(words[:6]),),
                                    z=z, raw={a: 50 + 20 * v for a, v in z.items()}))
    return rows


def test_five_runs_test_on_disjoint_sixths_and_choose_the_epoch_on_another() -> None:
    script = _script()
    rows = _rows(302)
    parts = script.partition(rows, seed=0)
    assert sorted(len(p) for p in parts) == [50, 50, 50, 50, 51, 51]
    assert set().union(*parts) == {r.source_id for r in rows}
    splits = [script.run_split(parts, run) for run in range(5)]
    for train, validation, test in splits:
        assert not (train & validation) and not (train & test) and not (validation & test)
        assert len(train | validation | test) == 302 and 200 <= len(train) <= 202
    tests = [test for _, _, test in splits]
    assert all(not (a & b) for i, a in enumerate(tests) for b in tests[i + 1:])  # non-overlapping test sets
    assert script.partition(rows, seed=0) == parts and script.partition(rows, seed=1) != parts


def test_a_referee_run_fine_tunes_on_the_aspect_and_correlates_its_test_part(tiny_encoder_dir: Path) -> None:
    torch.set_num_threads(1)
    script = _script()
    rows = _rows(18, seed=3)
    split = script.run_split(script.partition(rows, seed=0), 0)
    options = {"encoder": str(tiny_encoder_dir), "max_length": 24, "batch_size": 4, "finetune_epochs": 2,
               "encoder_lr": 1e-3, "head_lr": 3e-3, "device": "cpu"}
    record = script.referee_run(rows, split, "simplicity", options, seed=0)
    assert record["aspect"] == "simplicity" and record["config"]["aspect"] == "simplicity"
    assert record["config"]["stages"] == [3] and record["best_epoch"] in (1, 2)
    assert record["outputs"] == {"train": 2 * len(split[0]), "test": 2 * len(split[2])}
    assert -1.0 <= record["pearson_z"] <= 1.0 and not math.isnan(record["pearson_raw"])
    assert record["validation_loss"] is not None


def test_correlations_use_the_aspects_z_and_mean_raw_rating() -> None:
    rows = _rows(4, seed=1)
    r_z, r_raw = _script().correlations([r.z["meaning"] for r in rows], rows, "meaning")
    assert r_z == pytest.approx(1.0) and r_raw == pytest.approx(1.0)  # raw is linear in z here
    r_other, _ = _script().correlations([r.z["meaning"] for r in rows], rows, "fluency")
    assert r_other < 1.0


def test_summarise_gives_one_row_per_setting_from_logs_written_per_aspect(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    def record(aspect: str, r: float, encoder: str = "mpnet") -> str:
        return json.dumps({"aspect": aspect, "pearson_z": r, "pearson_raw": r - 0.01, "split_seed": 0,
                           "config": {"encoder": encoder, "encoder_lr": 2e-5}})

    (tmp_path / "a.jsonl").write_text("\n".join([record("meaning", 0.7), record("meaning", 0.5)]) + "\n")
    (tmp_path / "b.jsonl").write_text(record("simplicity", 0.4) + "\n" + record("fluency", 0.3, encoder="minilm"))
    _script().summarise([tmp_path / "a.jsonl", tmp_path / "b.jsonl"])
    minilm, mpnet = capsys.readouterr().out.strip().splitlines()
    assert "0.600 ± 0.141 (raw 0.590 ± 0.141) | not run | 0.400 ± 0.000" in mpnet and "2/0/1 runs" in mpnet
    assert "not run | 0.300 ± 0.000 (raw 0.290 ± 0.000) | not run" in minilm and "[minilm," in minilm
