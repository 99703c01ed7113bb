"""SIERA in the learned-metric family: its config, training (on a corpus of references only) and checkpoint
loading; its value is P(output simpler than its source).

Importing this module registers the kind and imports neither torch nor Django.
"""

from __future__ import annotations

from metrics.learned.kinds import PairKind, register_kind
from metrics.siera.config import SieraConfig

SIERA = register_kind(PairKind("siera", "SIERA", SieraConfig, needs_campaigns=False, uses_corpora=True,
                               value_name="p_simpler", package="metrics.siera", scorer="SieraScorer"))
