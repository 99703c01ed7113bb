"""When the token encoder fails, analyses that needed it are marked degraded instead of passing as complete."""

from __future__ import annotations

import pytest

from annotation.analysis import DEGRADED_SUFFIX, ENGINE_VERSION, Analysis, analyze_many, is_degraded_version
from annotation.analysis import engine as engine_module

NEEDS_ENCODER = ("The committee postponed the vote until Friday.", "The committee delayed the vote until Friday.")
LEXICAL_ONLY = ("The old man walked slowly to the market.", "The man walked to the market.")


class BrokenEncoder:
    def encode(self, texts: object, spans: object) -> object:
        raise RuntimeError("CUDA out of memory")


def test_a_pair_that_needed_the_failed_encoder_is_degraded(monkeypatch: pytest.MonkeyPatch) -> None:
    healthy = analyze_many([NEEDS_ENCODER, LEXICAL_ONLY])
    monkeypatch.setattr(engine_module, "get_encoder", BrokenEncoder)
    degraded, lexical = analyze_many([NEEDS_ENCODER, LEXICAL_ONLY])
    assert degraded.degraded and degraded.error is None
    assert degraded.engine_version == ENGINE_VERSION + DEGRADED_SUFFIX == "1.0.0+lexical"
    assert is_degraded_version(degraded.engine_version) and not is_degraded_version(ENGINE_VERSION)
    assert degraded.edits  # still a usable (lexical) analysis
    # The pair that never needed the encoder is exactly as with a working one.
    assert lexical == healthy[1] and not lexical.degraded
    assert not healthy[0].degraded and healthy[0].engine_version == ENGINE_VERSION


def test_the_flag_survives_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine_module, "get_encoder", BrokenEncoder)
    (result,) = analyze_many([NEEDS_ENCODER])
    payload = result.to_dict()
    assert payload["degraded"] is True
    assert Analysis.from_dict(payload) == result
    del payload["degraded"]  # analyses stored before the flag existed
    assert Analysis.from_dict(payload).degraded is False
