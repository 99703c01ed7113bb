"""A tiny BERT encoder (2 layers, hidden 32) with its own vocabulary, built locally without downloads."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.metrics.lens.factories import WORDS

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


@pytest.fixture(scope="session")
def tiny_encoder_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from transformers import AutoTokenizer, BertConfig, BertModel

    directory = tmp_path_factory.mktemp("tiny-bert")
    (directory / "vocab.txt").write_text("\n".join([*SPECIAL, *WORDS]) + "\n")
    config = BertConfig(
        vocab_size=len(SPECIAL) + len(WORDS),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=32,
    )
    torch.manual_seed(1234)
    BertModel(config).save_pretrained(str(directory))
    # The saved config.json tells AutoTokenizer to build a (fast) BERT tokenizer from vocab.txt.
    tokenizer = AutoTokenizer.from_pretrained(str(directory), local_files_only=True, model_max_length=24)
    tokenizer.save_pretrained(str(directory))
    return directory
