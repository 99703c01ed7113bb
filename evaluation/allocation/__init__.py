"""Pure core for adaptive allocation research: replay a released study under an allocation policy.

Nothing here imports Django. :class:`Study` holds a study's released ratings as a grid, :func:`simulate`
replays it under a :class:`Policy` and measures how fast the revealed ranking reaches the full data's.
"""

from evaluation.allocation.policies import MIN_SCREEN, POLICIES, Policy, make_policy
from evaluation.allocation.simulate import Trace, Truth, curves, kendall_tau_b, simulate, summarise
from evaluation.allocation.study import Revealed, Screen, Study, full_leaderboard

__all__ = [
    "MIN_SCREEN",
    "POLICIES",
    "Policy",
    "Revealed",
    "Screen",
    "Study",
    "Trace",
    "Truth",
    "curves",
    "full_leaderboard",
    "kendall_tau_b",
    "make_policy",
    "simulate",
    "summarise",
]
