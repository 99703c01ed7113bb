from __future__ import annotations

import numpy as np
import pytest

from evaluation.stats.records import RatingRecord
from evaluation.stats.zscores import rater_scales, with_zscores


def rec(rater: str, raw: float, z: float | None = None, output: str = "o") -> RatingRecord:
    return RatingRecord(source="s", output=output, system="A", rater=rater, raw=raw, z=z)


def test_zscores_use_sample_std_per_rater() -> None:
    values = [10.0, 20.0, 60.0]
    records = [rec("r1", v, output=f"o{i}") for i, v in enumerate(values)] + [rec("r2", 5.0), rec("r2", 7.0)]
    out, warnings = with_zscores(records)
    assert warnings == []
    expected = (np.array(values) - np.mean(values)) / np.std(values, ddof=1)
    assert [r.z for r in out[:3]] == pytest.approx(list(expected))
    assert [r.z for r in out[3:]] == pytest.approx([-1 / np.sqrt(2), 1 / np.sqrt(2)])


def test_given_zscores_are_kept() -> None:
    records = [rec("r1", 10.0, z=3.0), rec("r1", 20.0)]
    out, _ = with_zscores(records)
    assert out[0].z == 3.0
    assert out[1].z == pytest.approx(1 / np.sqrt(2))  # scale from all of r1's ratings
    assert with_zscores([rec("r1", 1.0, z=0.2)]) == ([rec("r1", 1.0, z=0.2)], [])


def test_degenerate_raters_warn_instead_of_failing() -> None:
    records = [rec("single", 50.0), rec("flat", 70.0), rec("flat", 70.0), rec("ok", 1.0), rec("ok", 2.0)]
    out, warnings = with_zscores(records)
    assert [r.z is None for r in out] == [True, True, True, False, False]
    assert len(warnings) == 2
    assert any("single" in w and "fewer than 2" in w for w in warnings)
    assert any("flat" in w and "equal" in w for w in warnings)
    assert rater_scales(records)["single"].std is None
