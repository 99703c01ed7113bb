"""Controlled perturbations of texts (APPLS, Guo et al.) at sentence level, free of Django.

``perturb("negate", text, magnitude=50, seed=1, context=Context(...))`` returns a :class:`Perturbed`:
the new text, the changes, how many spans were eligible and how many changed, or ``skipped`` with the
reason when the text has no eligible span.  :data:`REGISTRY` maps the twelve names to their criterion
and expected direction; :func:`lens_systems` builds the LENS paper's Figure 2 systems.
"""

from metrics.perturb import perturbations  # noqa: F401  (registration)
from metrics.perturb.base import (
    CRITERIA,
    REGISTRY,
    Change,
    Context,
    Direction,
    Perturbation,
    PerturbationError,
    Perturbed,
    get_perturbation,
    perturb,
)
from metrics.perturb.figure import LENS_SYSTEMS, lens_systems
from metrics.perturb.ood import OUT_OF_DOMAIN

__all__ = [
    "CRITERIA",
    "LENS_SYSTEMS",
    "OUT_OF_DOMAIN",
    "REGISTRY",
    "Change",
    "Context",
    "Direction",
    "Perturbation",
    "PerturbationError",
    "Perturbed",
    "get_perturbation",
    "lens_systems",
    "perturb",
]
