"""The research configuration's experiment (issue 47): its cross-validation runs under the selection guard on
SimpEval_past's sources only, a selection step that reads a test set fails, and the test step keeps τ_all's
interval, the system level and every SimpEval_2022 output's score (enough to compute them again)."""

from __future__ import annotations

from pathlib import Path

import pytest

from experiments import datasets, research_config
from experiments.figures import system_figures, tau_all_ci
from experiments.selection import SelectionLeak
from metrics.lens.types import Sample

pytestmark = pytest.mark.data

TINY = ["--option", "epochs=1", "--option", "max_length=24", "--option", "hidden_sizes=[8]", "--threads", "1",
        "--folds", "2", "--max-sources", "4"]


def test_cross_validation_chooses_on_simpeval_past_only(
    simpeval_data_dir: Path, tiny_encoder_dir: Path,
) -> None:
    args = research_config.parse(["cv", "--kind", "lens", "--choice", "rank_weight=0,10",
                                  "--option", f'encoder="{tiny_encoder_dir}"', *TINY])
    report = research_config.cross_validation(args, simpeval_data_dir)
    assert set(report["candidates"]) == {"0", "10"} and report["chosen"] in {"0", "10"}
    assert all(len(c["tau_all_folds"]) == 2 for c in report["candidates"].values())
    assert "simpeval_past.csv" in report["read"]
    assert not {"simpeval_2022.csv", "simplicity_DA.csv", "simpDA_2022.csv"} & set(report["read"])


def test_a_selection_step_that_reads_a_test_set_fails(
    simpeval_data_dir: Path, tiny_encoder_dir: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    load = datasets.load_simpeval_past

    def leaky(root: Path) -> list[Sample]:
        datasets.load_simpeval_2022(root)  # e.g. a choice peeking at the test set
        return load(root)

    monkeypatch.setattr(datasets, "load_simpeval_past", leaky)
    args = research_config.parse(["cv", "--kind", "lens", "--option", f'encoder="{tiny_encoder_dir}"', *TINY])
    with pytest.raises(SelectionLeak, match="simpeval_2022"):
        research_config.cross_validation(args, simpeval_data_dir)


def test_the_test_step_keeps_the_interval_the_system_level_and_every_output_score(
    simpeval_data_dir: Path, tiny_encoder_dir: Path, tmp_path: Path,
) -> None:
    args = research_config.parse(["test", "--kind", "lens", "--seeds", "0", "--option", f'encoder="{tiny_encoder_dir}"',
                                  *TINY, "--max-sources", "3"])  # the last --max-sources counts
    run = research_config.test(args, simpeval_data_dir)["runs"][0]
    low, high = run["simpeval_2022_ci"]
    assert -1 <= low <= high <= 1
    system = run["simpeval_2022_system"]
    assert system["pairs"] == 15 and len(system["means"]) == 6
    assert system["pairwise_accuracy"] == system["agreeing_pairs"] / 15

    # the kept scores are enough to compute the figures again afterwards
    s22 = datasets.load_simpeval_2022(simpeval_data_dir)
    kept = run["simpeval_2022_scores"]
    assert [(source, system) for source, system, _ in kept] == [(s.source_id, name) for s, name in s22]
    values = [score for _, _, score in kept]
    assert research_config.tau([s for s, _ in s22], values) == run["simpeval_2022"]
    assert tau_all_ci([s for s, _ in s22], values) == run["simpeval_2022_ci"]
    assert system_figures(s22, values) == system
