"""REFEREE and SIERA read a (complex, output) pair whole by default, up to the encoder's own limit.

Both join the pair into one text, "complex [SEP] output", so a cap on its tokens cuts the end of the output
first. SimpEval_2022 holds pairs of up to 211 MiniLM tokens; the former default of 128 cut 44 of its 360.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import torch

from metrics.learned.checkpoint import write_checkpoint
from metrics.learned.pairs import load_encoder
from metrics.lens.config import MAX_TOKENS
from metrics.referee import RefereeConfig, RefereeScorer
from metrics.referee.config import HUMAN_SIGNAL
from metrics.referee.model import RefereeModel
from metrics.siera import SieraConfig
from metrics.siera.model import SieraModel
from tests.tiny import WORDS, build_tiny_bert


@pytest.fixture(scope="module")
def roomy_encoder_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny BERT with room for MAX_TOKENS positions and no tokenizer limit of its own below that."""
    return build_tiny_bert(tmp_path_factory.mktemp("tiny-bert-512"), WORDS, hidden=32, layers=2, seed=7,
                           positions=MAX_TOKENS)


def _pairs_differing_in_the_last_word() -> list[tuple[str, str]]:
    rng = random.Random(3)
    complex_ = " ".join(rng.choice(WORDS) for _ in range(140))
    output = " ".join(rng.choice(WORDS) for _ in range(130))
    # 274 tokens joined; at 128 the last word goes in either order (SIERA reads both)
    return [(complex_, f"{output} cat"), (complex_, f"{output} dog")]


@pytest.mark.parametrize("kind", ["referee", "siera"])
def test_the_default_length_reads_the_end_of_a_long_output(roomy_encoder_dir: Path, kind: str) -> None:
    torch.manual_seed(0)
    pairs = _pairs_differing_in_the_last_word()
    max_length = (RefereeConfig if kind == "referee" else SieraConfig)(encoder=str(roomy_encoder_dir)).max_length
    encoder = load_encoder(str(roomy_encoder_dir), max_length=max_length)
    assert encoder.max_length == MAX_TOKENS
    if kind == "referee":
        model: torch.nn.Module = RefereeModel(encoder, [HUMAN_SIGNAL]).eval()
        score = lambda: model(pairs)[:, 0]  # noqa: E731
    else:
        siera = SieraModel(encoder).eval()
        score = lambda: siera.two_way(pairs)  # noqa: E731
    with torch.inference_mode():
        whole = score()
        encoder.max_length = 128  # the former default: the last word of each output is cut away
        cut = score()
    assert not torch.isclose(whole[0], whole[1], atol=1e-6)
    assert torch.isclose(cut[0], cut[1], atol=1e-6)


def test_a_version_reads_pairs_as_it_was_trained_unless_an_experiment_says_otherwise(
    roomy_encoder_dir: Path, tmp_path: Path
) -> None:
    """A version trained at 128 tokens keeps scoring at 128 (its scores do not change under it);
    ``max_length`` at load time reads further, to compare read lengths on one checkpoint."""
    torch.manual_seed(0)
    model = RefereeModel(load_encoder(str(roomy_encoder_dir), max_length=128), [HUMAN_SIGNAL])
    write_checkpoint(tmp_path / "best", kind="referee", config=RefereeConfig(encoder=str(roomy_encoder_dir),
                                                                             max_length=128).to_dict(),
                     modules={"model": model}, encoder=model.pair.encoder, encoder_name=str(roomy_encoder_dir),
                     metadata={"max_length": 128, "signals": [HUMAN_SIGNAL]})
    pairs = _pairs_differing_in_the_last_word()
    trained, whole = RefereeScorer.load(tmp_path / "best"), RefereeScorer.load(tmp_path / "best", max_length=MAX_TOKENS)
    as_trained, read_whole = trained.predict(pairs), whole.predict(pairs)
    assert as_trained[0] == pytest.approx(as_trained[1], abs=1e-6)
    assert read_whole[0] != pytest.approx(read_whole[1], abs=1e-6)
    # and each scorer says which pairs it cut
    assert trained.truncated([*pairs, ("the cat", "a dog")]) == [True, True, False]
    assert whole.truncated(pairs) == [False, False]
