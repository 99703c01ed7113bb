"""The suite's version, in a module of its own so that the metric modules and the package both import it."""

SUITE_VERSION = "1.0"
"""Bumped whenever any metric's output could change, so stored scores can be recomputed."""
