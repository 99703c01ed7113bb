"""Where the released datasets are: the one reader of SIMPEVAL_DATA_DIR.

Pure (no Django), so the benchmarks and the pure cores' tests use it without settings; Django code
reads `settings.SIMPEVAL_DATA_DIR`, which is this function's answer.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA_DIR = REPO_ROOT.parent / "shared" / "data"


def simpeval_data_dir() -> Path:
    """``$SIMPEVAL_DATA_DIR``, else ``shared/data`` beside the repository (``../shared/data``)."""
    configured = os.environ.get("SIMPEVAL_DATA_DIR", "").strip()
    return Path(configured).expanduser().resolve() if configured else DEFAULT_DATA_DIR.resolve()
