"""Tests on a CUDA device, run with ``--noconftest`` (no Django). ``CUDA_ONLY`` is each module's ``pytestmark``;
the shared fixture is the plugin ``tests.gpu.cuda``, which each module names in ``pytest_plugins``."""

import pytest
import torch

CUDA_ONLY = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device"),
]
