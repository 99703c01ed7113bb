"""A released study as a grid of ratings, and what a simulated campaign has revealed of it so far.

A study is a grid ``(source, slot, system)``: ``slot`` is one rater's screen of a source. For SimpEval the
slots are the released ``rating_k`` columns (anonymous rater slots, whose released z-scores are kept as
released: they cannot be recomputed from the file); for a file that names its raters (SimpDA_2022's
workers) the ``k``-th rating of each output, in file order, is slot ``k``, and z-scores are recomputed
from what each rater has rated *so far*, as they would be in a live campaign.

:class:`Revealed` is the simulator's state: which cells have been revealed, which screens have been used
(a rater slot sees a source once: a screen that left an output off can never show it later) and the cost
(ratings revealed). Its statistics follow the leaderboard's rule (:mod:`evaluation.stats.leaderboard`):
mean per output over its revealed ratings, then mean per system over its outputs; with everything
revealed they are the full data's, and :meth:`Revealed.leaderboard` runs the platform's own leaderboard
on the revealed records.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from evaluation.stats.bootstrap import FloatArray
from evaluation.stats.leaderboard import Leaderboard, system_leaderboard
from evaluation.stats.records import RatingRecord
from evaluation.stats.zscores import with_zscores

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Screen:
    """What a policy asks for: one rater slot's screen of one source, showing these systems' outputs."""

    source: int
    slot: int
    systems: tuple[int, ...]


@dataclass
class Study:
    """Every released rating of a study, as arrays over ``(source, slot, system)`` (NaN: no rating).

    ``metric_scores`` (``(metric, source, system)``, higher is better, NaN: no output) are automatic
    metric scores that metric-guided policies may read; they never see a rating before it is revealed.
    """

    name: str
    sources: list[str]
    systems: list[str]
    raw: FloatArray  # (S, R, K)
    z: FloatArray  # released z-scores (S, R, K); NaN where recomputed or missing
    rater: IntArray  # (S, R, K) index into ``raters``; -1 where no rating
    raters: list[str]
    outputs: list[list[str]]  # (S, K) output id; "" where the system has no output for the source
    recompute_z: bool
    metric_scores: FloatArray | None = None
    metric_names: list[str] = field(default_factory=list)

    @property
    def shape(self) -> tuple[int, int, int]:
        s, r, k = self.raw.shape
        return int(s), int(r), int(k)

    @property
    def present(self) -> BoolArray:
        """Cells that hold a rating."""
        return np.isfinite(self.raw)

    @property
    def full_ratings(self) -> int:
        return int(self.present.sum())

    @classmethod
    def from_records(cls, records: Sequence[RatingRecord], *, name: str) -> Study:
        """Build the grid from rating records.

        When every record carries a z-score (SimpEval), the rater names are the slots (``slot-k``) and the
        z-scores are kept; otherwise the raters are named people, the ``k``-th rating of an output (in the
        records' order) is slot ``k``, and z-scores are recomputed from the revealed ratings.
        """
        if not records:
            raise ValueError(f"study {name!r}: no ratings")
        recompute = any(r.z is None for r in records)
        sources = list(dict.fromkeys(r.source for r in records))
        systems = sorted({r.system for r in records})
        raters = list(dict.fromkeys(r.rater for r in records))
        src_ix = {s: i for i, s in enumerate(sources)}
        sys_ix = {s: i for i, s in enumerate(systems)}
        rater_ix = {s: i for i, s in enumerate(raters)}
        if recompute:
            seen: dict[str, int] = {}
            slot_of = []
            for r in records:
                slot_of.append(seen.get(r.output, 0))
                seen[r.output] = slot_of[-1] + 1
            n_slots = max(seen.values())
        else:
            slot_names = sorted({r.rater for r in records}, key=lambda x: (len(x), x))
            slot_ix = {s: i for i, s in enumerate(slot_names)}
            slot_of = [slot_ix[r.rater] for r in records]
            n_slots = len(slot_names)
        shape = (len(sources), n_slots, len(systems))
        raw = np.full(shape, np.nan)
        z = np.full(shape, np.nan)
        rater = np.full(shape, -1, dtype=np.int64)
        outputs = [["" for _ in systems] for _ in sources]
        for record, slot in zip(records, slot_of, strict=True):
            s, k = src_ix[record.source], sys_ix[record.system]
            if outputs[s][k] not in ("", record.output):
                raise ValueError(
                    f"study {name!r}: system {record.system!r} has two outputs for source {record.source!r}"
                )
            outputs[s][k] = record.output
            if np.isfinite(raw[s, slot, k]):
                raise ValueError(f"study {name!r}: output {record.output!r} has two ratings in slot {slot + 1}")
            raw[s, slot, k] = record.raw
            z[s, slot, k] = np.nan if record.z is None else record.z
            rater[s, slot, k] = rater_ix[record.rater]
        return cls(
            name=name, sources=sources, systems=systems, raw=raw, z=z, rater=rater, raters=raters,
            outputs=outputs, recompute_z=recompute,
        )

    def records(self, mask: BoolArray) -> list[RatingRecord]:
        """The rating records of the cells in ``mask`` (z-scores as released; None where recomputed)."""
        out = []
        for s, slot, k in zip(*np.nonzero(mask & self.present), strict=True):
            zval = self.z[s, slot, k]
            out.append(
                RatingRecord(
                    source=self.sources[s], output=self.outputs[s][k], system=self.systems[k],
                    rater=self.raters[self.rater[s, slot, k]], raw=float(self.raw[s, slot, k]),
                    z=None if self.recompute_z or not np.isfinite(zval) else float(zval),
                )
            )
        return out

    def zscores(self, mask: BoolArray) -> FloatArray:
        """z-score of every revealed cell (NaN elsewhere): released, or per rater over the revealed cells
        (sample standard deviation; NaN for a rater with fewer than 2 ratings or no spread), as
        :func:`evaluation.stats.zscores.with_zscores` computes them."""
        if not self.recompute_z:
            return np.where(mask, self.z, np.nan)
        seen = mask & self.present
        who = self.rater[seen]
        values = self.raw[seen]
        n_raters = len(self.raters)
        count = np.bincount(who, minlength=n_raters).astype(np.float64)
        total = np.bincount(who, weights=values, minlength=n_raters)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = total / count
            dev = values - mean[who]
            var = np.bincount(who, weights=dev**2, minlength=n_raters) / (count - 1)
            std = np.where((count >= 2) & (var > 0), np.sqrt(var), np.nan)
        out = np.full(self.raw.shape, np.nan)
        out[seen] = dev / std[who]
        return out

    def output_means(self, mask: BoolArray) -> FloatArray:
        """``(S, K)`` mean z-score of each output over its revealed ratings (NaN: none)."""
        z = self.zscores(mask)
        has = np.isfinite(z)
        count = has.sum(axis=1)
        total = np.where(has, z, 0.0).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def system_means(output_means: FloatArray) -> FloatArray:
    """Per-system mean over its outputs that have a score (NaN for a system with none)."""
    has = np.isfinite(output_means)
    count = has.sum(axis=0)
    total = np.where(has, output_means, 0.0).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


class Revealed:
    """What a simulated campaign has revealed so far; ``cost`` counts ratings revealed."""

    def __init__(self, study: Study) -> None:
        self.study = study
        s, r, k = study.shape
        self.mask = np.zeros((s, r, k), dtype=bool)
        self.used = np.zeros((s, r), dtype=bool)
        self.available = study.present.any(axis=2)  # screens that hold any rating
        self.cost = 0
        self.screens = 0
        self._means: FloatArray | None = None

    def open_screens(self) -> BoolArray:
        """``(S, R)``: screens not shown yet that hold ratings."""
        return self.available & ~self.used

    def screen_cost(self, screen: Screen) -> int:
        return int(self.study.present[screen.source, screen.slot, list(screen.systems)].sum())

    def reveal(self, screen: Screen) -> int:
        """Show one screen: its cells are revealed and the screen is used up. Returns its cost."""
        s_n, r_n, k_n = self.study.shape
        if not (0 <= screen.source < s_n and 0 <= screen.slot < r_n):
            raise ValueError(f"screen ({screen.source}, {screen.slot}) is outside the study")
        if self.used[screen.source, screen.slot]:
            raise ValueError(f"screen ({screen.source}, {screen.slot}) was already shown")
        systems = list(screen.systems)
        if not systems or len(set(systems)) != len(systems) or min(systems) < 0 or max(systems) >= k_n:
            raise ValueError(f"screen ({screen.source}, {screen.slot}) asks for systems {systems}")
        cost = self.screen_cost(screen)
        self.used[screen.source, screen.slot] = True
        self.mask[screen.source, screen.slot, systems] = self.study.present[screen.source, screen.slot, systems]
        self.cost += cost
        self.screens += 1
        self._means = None
        return cost

    def output_means(self) -> FloatArray:
        if self._means is None:
            self._means = self.study.output_means(self.mask)
        return self._means

    def system_means(self) -> FloatArray:
        return system_means(self.output_means())

    def counts(self) -> IntArray:
        """``(S, K)`` ratings revealed per output."""
        return np.asarray(self.mask.sum(axis=1), dtype=np.int64)

    def records(self) -> list[RatingRecord]:
        return self.study.records(self.mask)

    def leaderboard(self, *, n_boot: int = 200, seed: int = 0) -> Leaderboard:
        """The platform's leaderboard (with significance clusters) on the revealed ratings."""
        records = self.records()
        if self.study.recompute_z:
            records, _ = with_zscores(records)
        return system_leaderboard(records, n_boot=n_boot, seed=seed)


def full_leaderboard(study: Study, *, n_boot: int = 200, seed: int = 0) -> Leaderboard:
    """The leaderboard of every rating in the study."""
    state = Revealed(study)
    state.mask[:] = study.present
    return state.leaderboard(n_boot=n_boot, seed=seed)
