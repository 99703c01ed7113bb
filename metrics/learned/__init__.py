"""The learned-metric family (LENS, REFEREE, SIERA...), free of Django: what every kind shares.

* :mod:`~metrics.learned.config`: one config base (:class:`LearnedConfig`, a :class:`Rule` per option, one
  :class:`ConfigError`);
* :mod:`~metrics.learned.training`: one training skeleton (:func:`fit_epochs` on an :class:`EpochLoop`: one
  best-epoch rule, patience, progress events and cancellation through :class:`Callback` s);
* :mod:`~metrics.learned.checkpoint`: one checkpoint format naming its kind, and the older layouts' readers;
* :mod:`~metrics.learned.kinds`: the :class:`LearnedKind` interface, the registry and :func:`load`;
* :mod:`~metrics.learned.pairs`: the pair encoder REFEREE and SIERA read ``"a [SEP] b"`` with (torch).

The names below are loaded on first use (PEP 562): importing ``metrics.learned`` imports neither torch nor
numpy; touching :class:`PairEncoder` does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from metrics.learned.lazy import lazy_exports

if TYPE_CHECKING:
    from metrics.learned.callbacks import (
        Callback,
        CancelCallback,
        EarlyStopping,
        HeldoutMetrics,
        ProgressCallback,
        ProgressEvent,
        TrainingCancelled,
        TrainResult,
    )
    from metrics.learned.checkpoint import (
        CONFIG_FILE,
        CheckpointError,
        load_weights,
        read_checkpoint,
        read_metadata,
        write_checkpoint,
    )
    from metrics.learned.config import ConfigError, LearnedConfig, Rule
    from metrics.learned.kinds import (
        LearnedKind,
        Scorer,
        TrainingInputs,
        get_kind,
        kinds,
        load,
        register_kind,
    )
    from metrics.learned.pairs import PairEncoder, length_batches, load_encoder, score_by_length
    from metrics.learned.training import (
        EpochLoop,
        SelectionKey,
        fit_epochs,
        improves_on,
        make_batches,
        seed_everything,
        selection_key,
    )

_HOMES = {
    "metrics.learned.callbacks": ("Callback", "CancelCallback", "EarlyStopping", "HeldoutMetrics",
                                  "ProgressCallback", "ProgressEvent", "TrainingCancelled", "TrainResult"),
    "metrics.learned.checkpoint": ("CONFIG_FILE", "CheckpointError", "load_weights", "read_checkpoint",
                                   "read_metadata", "write_checkpoint"),
    "metrics.learned.config": ("ConfigError", "LearnedConfig", "Rule"),
    "metrics.learned.kinds": ("LearnedKind", "Scorer", "TrainingInputs", "get_kind", "kinds", "load",
                              "register_kind"),
    "metrics.learned.pairs": ("PairEncoder", "length_batches", "load_encoder", "score_by_length"),
    "metrics.learned.training": ("EpochLoop", "SelectionKey", "fit_epochs", "improves_on", "make_batches",
                                 "seed_everything", "selection_key"),
}
__all__ = [
    "CONFIG_FILE", "Callback", "CancelCallback", "CheckpointError", "ConfigError", "EarlyStopping",
    "EpochLoop", "HeldoutMetrics", "LearnedConfig", "LearnedKind", "PairEncoder", "ProgressCallback",
    "ProgressEvent", "Rule", "Scorer", "SelectionKey", "TrainResult", "TrainingCancelled", "TrainingInputs",
    "fit_epochs", "get_kind", "improves_on", "kinds", "length_batches", "load", "load_encoder", "load_weights",
    "make_batches", "read_checkpoint", "read_metadata", "register_kind", "score_by_length",
    "seed_everything", "selection_key", "write_checkpoint",
]

__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
