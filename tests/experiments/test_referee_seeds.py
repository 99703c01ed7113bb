"""`experiments/referee_seeds.py train`, the step that runs on a machine without the web stack: what its result
files hold, on the tiny encoder."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from types import ModuleType

import pytest
import torch

from experiments import referee_seeds
from tests.tiny import REFEREE_CORPUS, lens_samples


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    torch.set_num_threads(1)


def _script() -> ModuleType:
    return referee_seeds


def test_train_writes_scores_for_every_test_pair_and_the_held_out_tau_of_each_epoch(
    tiny_encoder_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from metrics.referee import RefereeScorer

    loaded_on: list[str | None] = []
    load = RefereeScorer.load.__func__  # type: ignore[attr-defined]

    def recording_load(cls: type, directory: Path, *, device: str | None = None,
                       max_length: int | None = None) -> RefereeScorer:
        loaded_on.append(device)
        return load(cls, directory, device=device, max_length=max_length)

    monkeypatch.setattr(RefereeScorer, "load", classmethod(recording_load))
    samples = lens_samples(8, 4, seed=5)
    held = sorted({s.source_id for s in samples})[:2]
    tests = {slug: [[pk, s.complex, s.output] for pk, s in enumerate(samples[:5], start=10)]
             for slug in ("s22", "simpda-2022", "wiki-da")}
    inputs = tmp_path / "inputs.json"
    inputs.write_text(json.dumps({"snapshot": "abc", "rows": [], "heldout_fraction": 0.25,
                                  "samples": [dataclasses.asdict(s) for s in samples],
                                  "heldout_sources": {"0": held}, "tests": tests}))
    options = {"encoder": str(tiny_encoder_dir), "max_length": 24, "batch_size": 4, "finetune_epochs": 2}
    _script().train(inputs, tmp_path / "out", ["0:3"], None, None, options)  # no --device: CUDA where there is one
    # scored where it trained: an H200 run once scored on its CPU, and ran out of time doing so
    assert loaded_on == ["cuda" if torch.cuda.is_available() else "cpu"]

    record = json.loads((tmp_path / "out" / "referee_0_3.json").read_text())
    assert record["stages"] == "3" and record["split_seed"] == 0
    assert [h["epoch"] for h in record["history"]] == [1, 2]
    assert all(h["heldout"]["tau"] for h in record["history"])  # every epoch scored on the held-out sources
    assert record["best_epoch"] in (1, 2)
    assert {slug: sorted(scores) for slug, scores in record["scores"].items()} == {
        slug: ["10", "11", "12", "13", "14"] for slug in tests}
    printed = capsys.readouterr().out
    assert "0:3:" in printed and "per stage-3 epoch 1: " in printed


def test_summarise_gives_each_columns_mean_and_sd_over_the_runs_that_have_a_value() -> None:
    runs: list[dict[str, float | None]] = [{"all": 0.2, "para": 0.5, "spl": None},
                                           {"all": 0.4, "para": None, "spl": None},
                                           {"all": 0.3, "para": 0.7, "spl": 0.1}]
    summarise = _script().summarise
    assert summarise(runs) == pytest.approx({"all": 0.3, "para": 0.6, "spl": 0.1})
    spread = summarise(runs, spread=True)
    assert spread["all"] == pytest.approx(0.1) and spread["para"] == pytest.approx(0.1414213562)
    assert spread["spl"] is None  # one run has it: no sd


def test_exported_text_signals_leave_only_the_encoders_own_to_compute(
    tiny_encoder_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from metrics.referee import RefereeConfig, data
    from metrics.referee.data import rated_outputs_corpus, signal_key, synthetic_outputs

    script = _script()
    samples = lens_samples(6, 4, seed=5)
    held = sorted({s.source_id for s in samples})[:2]
    training = [s for s in samples if s.source_id not in held]
    signals = script.text_signals(REFEREE_CORPUS, [0, 1], {1: training})
    assert {name for *_, values in signals for name in values} == {"self_bleu", "fkgl", "compression", "pomme",
                                                                    "sari", "bleu"}
    exported = {(c, o, tuple(others)) for c, o, others, _ in signals}
    for seed in (0, 1):  # every seed's synthetic outputs, once each
        assert {signal_key(e) for e in synthetic_outputs(REFEREE_CORPUS, degraded_fraction=0.4, seed=seed)} <= exported
    stage2 = rated_outputs_corpus(training, RefereeConfig(seed=1, stage2_data="both"))
    assert stage2 and {signal_key(e) for e in stage2} <= exported  # stage 2's rated outputs, degraded copies too
    assert len(exported) == len(signals)

    computed: list[str] = []
    suite_values = data._suite_values

    def encoder_metrics_only(name: str, items: list[tuple[str, str, tuple[str, ...]]],
                             **options: object) -> list[float | None]:
        computed.append(name)
        assert name == "bertscore", f"{name} was computed again"
        return suite_values(name, items, **options)

    monkeypatch.setattr("metrics.referee.data._suite_values", encoder_metrics_only)
    inputs = tmp_path / "inputs.json"
    inputs.write_text(json.dumps({"snapshot": "abc", "rows": REFEREE_CORPUS, "heldout_fraction": 0.25,
                                  "samples": [dataclasses.asdict(s) for s in samples],
                                  "heldout_sources": {"1": held},
                                  "tests": {"s22": [[1, samples[0].complex, samples[0].output]]},
                                  "signals": signals}))
    options = {"encoder": str(tiny_encoder_dir), "max_length": 24, "batch_size": 4, "finetune_epochs": 1,
               "stage2_data": "both"}
    script.train(inputs, tmp_path / "out", ["1:123"], "cpu", None, options)
    assert set(computed) == {"bertscore"}  # once for the corpus, once for the rated outputs
    record = json.loads((tmp_path / "out" / "referee_1_123.json").read_text())
    assert [h["stage"] for h in record["history"]] == ["stage1", "stage2", "stage3"]
    assert record["heldout"]["rated_outputs"] == len(stage2)
