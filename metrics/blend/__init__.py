"""The blended metric (BLEND, Ma et al. WMT17, for simplification): a learned combination of other metrics'
scores and simple text features, fitted to human ratings, as a kind of the learned-metric family.

* :mod:`~metrics.blend.features`: the components (suite metrics, learned versions, text features) and the
  feature matrix of a batch;
* :mod:`~metrics.blend.learners`: the learners (ridge, pairwise ridge, RBF kernel ridge) and the grouped
  cross-validation that chooses one, in numpy;
* :mod:`~metrics.blend.crossfit`: out-of-fold scores of the learned components trained on the blend's own
  sources, which its cross-validation and fit read;
* :mod:`~metrics.blend.kind`: the kind (its config, training, checkpoint and scorer), registered with the
  family.

Importing the package imports neither numpy, torch nor Django.
"""
