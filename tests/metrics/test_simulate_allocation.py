"""manage.py simulate_allocation and its service (metrics.services.allocation): the summary's exact keys,
uniform and adaptive always simulated, clear errors for bad policies, seeds and budgets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from core.errors import ServiceError
from metrics.services.allocation import (
    SEEDS_MAX,
    allocation_policies_check,
    campaign_allocation_simulate,
)
from tests.factories import simulation_campaign

pytestmark = pytest.mark.django_db

ROW_KEYS = {"dataset", "policy", "seeds", "full_ratings", "ratings_to_tau95", "top1_accuracy"}


@pytest.fixture
def campaign():
    return simulation_campaign(n_sources=8)


def test_the_command_writes_the_summary_with_the_issue_keys(campaign, tmp_path: Path) -> None:
    out = tmp_path / "out"
    call_command("simulate_allocation", "--campaign", "sim", "--policy", "round_robin", "--seeds", "3",
                 "--out", str(out), verbosity=0)
    rows = json.loads((out / "summary.json").read_text())
    assert [row["policy"] for row in rows] == ["uniform", "adaptive", "round_robin"]  # always both, first
    for row in rows:
        assert set(row) == ROW_KEYS
        assert set(row["ratings_to_tau95"]) == {"median", "p90"}
        assert set(row["top1_accuracy"]) == {"0.1", "0.2", "0.3", "0.5"}
        assert row["dataset"] == "sim" and row["seeds"] == 3 and row["full_ratings"] == 8 * 3 * 3
        assert all(0.0 <= v <= 1.0 for v in row["top1_accuracy"].values())
        median = row["ratings_to_tau95"]["median"]
        assert median is None or 0 < median <= row["full_ratings"]
    assert (out / "curves.svg").read_text().startswith("<svg")
    curves = json.loads((out / "curves.json").read_text())
    assert set(curves["policies"]) == {"uniform", "adaptive", "round_robin"}


def test_a_full_budget_ends_every_run_on_the_full_ranking(campaign) -> None:
    """The three systems are far apart: with every rating revealed tau is 1, so each seed gets there."""
    result = campaign_allocation_simulate(campaign, policies="uniform", seeds=2)
    assert [row["policy"] for row in result.summary] == ["uniform", "adaptive"]
    for details in result.details:
        assert details["ratings_to_tau95"]["never"] == 0
    assert result.curves["uniform"]["tau_median"][-1] == 1.0


@pytest.mark.parametrize(("args", "option", "words"), [
    (["--policy", "uniform,best"], "--policy", "unknown allocation policy 'best'"),
    (["--seeds", "0"], "--seeds", "from 1 to"),
    (["--seeds", str(SEEDS_MAX + 1)], "--seeds", f"from 1 to {SEEDS_MAX}"),
    (["--budget", "0"], "--budget", "from 1 to 72"),
    (["--budget", "73"], "--budget", "from 1 to 72"),
    (["--policy", "metric_guided"], "--policy", "metric scores"),
])
def test_bad_options_are_clear_errors_naming_the_option(campaign, tmp_path: Path, args, option, words) -> None:
    with pytest.raises(CommandError) as caught:
        call_command("simulate_allocation", "--campaign", "sim", "--out", str(tmp_path), *args, verbosity=0)
    assert str(caught.value).startswith(option + ":") and words in str(caught.value)
    assert not (tmp_path / "summary.json").exists()


def test_an_unknown_campaign_is_named(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="--campaign: no campaign 'nope'"):
        call_command("simulate_allocation", "--campaign", "nope", "--out", str(tmp_path), verbosity=0)


def test_policy_names_keep_uniform_and_adaptive_first_and_once() -> None:
    assert allocation_policies_check("adaptive, elimination,uniform,elimination") == [
        "uniform", "adaptive", "elimination"]
    assert allocation_policies_check([]) == ["uniform", "adaptive"]
    with pytest.raises(ServiceError) as caught:
        allocation_policies_check("x" * 500)
    assert caught.value.field == "policy"


def test_the_work_of_a_simulation_is_bounded() -> None:
    from core.budgets import ALLOCATION_WORK_MAX, allocation_work_check

    allocation_work_check(policies=13, seeds=50, ratings=12_000)  # every policy on SimpEval_past: fits
    with pytest.raises(ServiceError) as caught:
        allocation_work_check(policies=13, seeds=200, ratings=ALLOCATION_WORK_MAX // 2000)
    assert caught.value.field == "seeds" and "at most" in caught.value.message
