"""`experiments/siera_seeds.py`: the training step that runs on a machine without the web stack (result files,
the deadline that ends a job's training between epochs) and the evaluation over them, on the tiny encoder."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest
import torch

from experiments import siera_seeds
from metrics.learned.callbacks import HeldoutMetrics, ProgressEvent
from tests.tiny import siera_rows


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    torch.set_num_threads(1)


def _script() -> ModuleType:
    return siera_seeds


def _inputs(tmp_path: Path) -> Path:
    rows = siera_rows()
    tests = {slug: [[pk, c, refs[0]] for pk, (_, c, refs) in enumerate(rows[:4], start=10)]
             for slug in ("s22", "simpda-2022", "wiki-da")}
    inputs = tmp_path / "inputs.json"
    inputs.write_text(json.dumps({"corpus": "asset-valid", "rows": rows, "tests": tests}))
    return inputs


def test_train_writes_one_result_per_seed_with_a_score_for_every_test_pair(
    tiny_encoder_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    options = {"encoder": str(tiny_encoder_dir), "max_length": 24, "batch_size": 4, "epochs": 2, "silver": True}
    _script().train(_inputs(tmp_path), tmp_path / "out", [0, 1], "cpu", options, None)

    for seed in (0, 1):
        record = json.loads((tmp_path / "out" / f"siera_silver-token_f1_{seed}.json").read_text())
        assert record["seed"] == seed and record["setting"] == "silver-token_f1"
        assert record["config"]["seeds"] == [seed] and record["config"]["silver"] is True
        assert record["epochs_run"] == len(record["history"]) >= 1 and record["stopped_by_deadline"] is False
        assert record["best_epoch"] in (1, 2) and record["device"] == "cpu"
        assert {slug: sorted(scores) for slug, scores in record["scores"].items()} == {
            slug: ["10", "11", "12", "13"] for slug in ("s22", "simpda-2022", "wiki-da")}
        assert all(0.0 <= v <= 1.0 for scores in record["scores"].values() for v in scores.values())
    printed = capsys.readouterr().out
    assert "seed 1 +silver (token_f1): " in printed and "validation accuracy" in printed


def test_the_deadline_stops_before_an_epoch_that_would_run_past_it(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [100.0]
    monkeypatch.setattr("time.perf_counter", lambda: clock[0])
    deadline = _script().Deadline(60.0, "seed 0")

    def epoch_ends_at(now: float, epoch: int) -> None:
        clock[0] = now
        deadline.on_progress(ProgressEvent("epoch", epoch, 10 * epoch, 100, 0.5,
                                           heldout=HeldoutMetrics(tau={}, pearson=None, loss=0.4)))

    epoch_ends_at(120.0, 1)  # 20 s an epoch: a second ends at 40 s, inside the 60
    assert not deadline.should_stop()
    epoch_ends_at(145.0, 2)  # the longest epoch took 25 s: a third would end at 70 s
    assert deadline.should_stop() and deadline.stopped_early
    assert not _script().Deadline(None, "seed 0").should_stop()  # no deadline: only early stopping ends a run


def test_evaluate_groups_runs_by_setting_beside_the_papers_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    script = _script()
    monkeypatch.setattr(script, "setup_django", lambda: None)
    figures = iter([{"all": 0.2, "w/o H1": 0.1, "wiki r": 0.1, "wiki rho": 0.0, "simpda r": 0.4, "simpda rho": 0.4},
                    {"all": 0.4, "w/o H1": 0.3, "wiki r": 0.2, "wiki rho": 0.1, "simpda r": 0.5, "simpda rho": 0.5}])
    monkeypatch.setattr(script, "_run_figures", lambda run, rated: next(figures))
    monkeypatch.setattr(script, "_rated_views", lambda: {})
    for seed in (0, 1):
        (tmp_path / f"siera_base_{seed}.json").write_text(json.dumps(
            {"seed": seed, "setting": "base", "device": "cpu", "train_seconds": 1.0, "best_epoch": 2,
             "epochs_run": 3, "stopped_by_deadline": seed == 1, "scores": {}}))
    script.evaluate(str(tmp_path / "siera_*.json"))
    lines = capsys.readouterr().out.splitlines()
    mean = next(line for line in lines if line.startswith("mean, base"))
    assert mean.split()[-6:] == ["0.300", "0.200", "0.150", "0.050", "0.450", "0.450"]
    assert any("2/3*" in line for line in lines)  # ended by the deadline, marked
    paper = lines[lines.index(mean) + 2]
    assert paper.split()[-4:] == ["0.029", "0.016", "0.394", "0.387"]
