"""The reference-adaptive top-k loss (LENS paper, Eq. 1), an optional within-source ranking term, and
max-over-references inference."""

from __future__ import annotations

import torch
from torch import Tensor


def topk_loss(predictions: Tensor, target: Tensor, ref_mask: Tensor, k: int) -> Tensor:
    """Mean squared error of each sample's k highest reference predictions against its human z-score.

    Per sample, k is clamped to its number of references, so a source with one reference gives the plain
    MSE. Each sample's squared errors are averaged over its selected references, then samples are averaged
    (Eq. 1's ``1/(km)`` when every sample has at least k references; with fewer, every sample still
    weighs the same).

    Args:
        predictions: ``[B, R]`` predicted z-score against every reference slot.
        target: ``[B]`` human z-scores.
        ref_mask: ``[B, R]`` True for real references, False for padding.
        k: Number of top predictions kept per sample (>= 1).

    Returns:
        Scalar loss.
    """
    if k < 1:
        raise ValueError("k must be >= 1")
    counts = ref_mask.sum(dim=1)
    if bool((counts == 0).any()):
        raise ValueError("every sample needs at least one reference")
    width = min(k, predictions.shape[1])
    masked = predictions.masked_fill(~ref_mask, float("-inf"))
    top_idx = masked.topk(width, dim=1).indices
    top = predictions.gather(1, top_idx)
    keep = torch.arange(width, device=predictions.device)[None, :] < counts.clamp(max=k)[:, None]
    squared = torch.where(keep, (top - target[:, None].to(top.dtype)) ** 2, torch.zeros_like(top))
    per_sample = squared.sum(dim=1) / keep.sum(dim=1).to(top.dtype)
    return per_sample.mean()


def pairwise_rank_loss(scores: Tensor, target: Tensor) -> Tensor:
    """RankNet's logistic loss over the ordered pairs of a batch: the mean of ``log(1 + exp(-(s_i - s_j)))``
    over every pair whose human z-scores have ``target_i > target_j`` (ties are not pairs); 0 without pairs.

    A training batch holds outputs of one source (``metrics.lens.batching``), so the pairs are the ones the
    Kendall tau-like compares: which of two outputs of the same sentence is better.

    Args:
        scores: ``[B]`` predicted scores (max over references, as at inference).
        target: ``[B]`` human z-scores.
    """
    better = target[:, None] > target[None, :]
    if not bool(better.any()):
        return scores.sum() * 0.0
    margin = scores[:, None] - scores[None, :]
    return torch.nn.functional.softplus(-margin[better]).mean()


def max_over_references(predictions: Tensor, ref_mask: Tensor) -> Tensor:
    """``[B, R]`` -> ``[B]``: the best prediction among each sample's real references."""
    return predictions.masked_fill(~ref_mask, float("-inf")).max(dim=1).values
