"""Pure statistics core of Rank & Rate: z-scores, agreement, leaderboards, metric correlation.

Nothing here imports Django; the evaluation app turns database rows into
:class:`RatingRecord` objects and calls these functions.
"""

from evaluation.stats.agreement import (
    RatingMatrix,
    alpha_leave_one_out,
    alpha_with_ci,
    krippendorff_alpha,
    rating_matrix,
)
from evaluation.stats.annotators import annotator_quality
from evaluation.stats.correlation import (
    TauItem,
    TauResult,
    kendall_tau_like,
    kendall_tau_like_ci,
    metric_correlation_ci,
    pearson,
)
from evaluation.stats.leaderboard import Leaderboard, output_scores, system_leaderboard
from evaluation.stats.records import RatingRecord, simpeval_records
from evaluation.stats.report import build_report
from evaluation.stats.zscores import with_zscores

__all__ = [
    "Leaderboard",
    "RatingMatrix",
    "RatingRecord",
    "TauItem",
    "TauResult",
    "alpha_leave_one_out",
    "alpha_with_ci",
    "annotator_quality",
    "build_report",
    "kendall_tau_like",
    "kendall_tau_like_ci",
    "krippendorff_alpha",
    "metric_correlation_ci",
    "output_scores",
    "pearson",
    "rating_matrix",
    "simpeval_records",
    "system_leaderboard",
    "with_zscores",
]
