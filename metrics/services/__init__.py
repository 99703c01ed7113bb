"""LENS in the product: training snapshots, the version registry, serving and meta-evaluation.

Modules: ``snapshot`` (campaign ratings -> samples, hashed), ``training`` (create / train / promote /
cancel versions), ``scoring`` (serving cache, score batches, rescore campaigns), ``meta_evaluation``.
"""
