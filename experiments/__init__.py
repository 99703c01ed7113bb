"""Paper reproductions and seed studies run on the product's public functions (not part of the product).

Run each from the repository root as a module, e.g. ``python -m experiments.referee_seeds --help``;
``experiments/README.md`` holds the result tables and the commands that reproduce them.
"""
