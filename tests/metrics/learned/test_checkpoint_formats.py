"""One checkpoint format for every kind, and the layouts written before it still load with the same scores."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_model

from metrics.learned.checkpoint import CONFIG_FILE, FORMAT, CheckpointError, read_metadata
from metrics.learned.kinds import get_kind, load
from metrics.lens.config import LensConfig, TrainConfig
from metrics.lens.encoders import HFEncoder, resolve_encoder_path
from metrics.lens.model import LensModel
from metrics.lens.scorer import LensScorer
from metrics.referee import RefereeConfig
from metrics.referee.config import HUMAN_SIGNAL
from metrics.referee.model import RefereeModel
from metrics.referee.training import RefereeTrainer
from metrics.siera.config import SieraConfig
from tests.tiny import lens_samples


class Item:
    def __init__(self, complex_text: str, output: str, references: tuple[str, ...]) -> None:
        self.complex, self.output, self.references = complex_text, output, references


def _items() -> list[Item]:
    return [Item(s.complex, s.output, s.references) for s in lens_samples(3, 3, seed=11)]


def _old_lens_checkpoint(model: LensModel, directory: Path, train: TrainConfig | None) -> Path:
    """The files the former ``metrics.lens.checkpoint.save_checkpoint`` wrote (format rank-and-rate-lens/1)."""
    directory.mkdir(parents=True)
    save_model(model, str(directory / "model.safetensors"))
    model.encoder.save_assets(directory / "encoder")
    metadata: dict[str, object] = {
        "format": "rank-and-rate-lens/1",
        "model": model.config.to_dict(),
        "encoder": {"name_or_path": model.config.encoder, "resolved_path": resolve_encoder_path(model.config.encoder),
                    "model_type": "bert", "num_layers": model.encoder.num_layers,
                    "hidden_size": model.encoder.hidden_size, "max_length": model.encoder.max_length},
        "train": train.to_dict() if train is not None else None,
        "epoch": 3, "heldout": {"tau": {"all": 0.5}, "pearson": None, "loss": 1.0},
    }
    (directory / "lens_config.json").write_text(json.dumps(metadata, indent=2, sort_keys=True) + "\n")
    return directory


@pytest.mark.parametrize("with_train_config", [True, False])
def test_a_checkpoint_written_by_the_old_lens_code_scores_the_same(
    tiny_encoder_dir: Path, tmp_path: Path, with_train_config: bool
) -> None:
    torch.manual_seed(4)
    config = LensConfig(encoder=str(tiny_encoder_dir), hidden_sizes=(16,), max_length=24)
    model = LensModel(config, HFEncoder.from_pretrained(config.encoder, max_length=config.max_length)).eval()
    items = _items()
    expected = LensScorer(model, device=torch.device("cpu"), precision="fp32").score(items)
    train = TrainConfig(model=config, k=2, seed=7) if with_train_config else None
    old = _old_lens_checkpoint(model, tmp_path / "old", train)

    metadata = read_metadata(old)
    assert metadata["kind"] == "lens" and metadata["format"] == FORMAT
    assert metadata["encoder_identity"]["num_layers"] == model.encoder.num_layers  # type: ignore[index,call-overload]
    if train is not None:
        assert TrainConfig.from_dict(metadata["config"]) == train  # type: ignore[arg-type]
    got = load(old, device="cpu").score(items)
    assert [v for v, _ in got] == pytest.approx([v for v, _ in expected], abs=1e-6)
    assert [p["score"] for _, p in got] == pytest.approx([p["score"] for _, p in expected], abs=1e-6)


def test_new_checkpoints_name_their_kind_and_load_through_one_function(tiny_checkpoint: Path) -> None:
    metadata = json.loads((tiny_checkpoint / CONFIG_FILE).read_text())
    assert metadata["format"] == FORMAT and metadata["kind"] == "lens"
    assert TrainConfig.from_dict(metadata["config"]).model.hidden_sizes
    assert not (tiny_checkpoint / "lens_config.json").exists()
    scores = load(tiny_checkpoint).score(_items())
    assert len(scores) == len(_items()) and all("truncated" in parts for _, parts in scores)


def test_an_old_referee_layout_loads_with_the_same_scores(tiny_encoder_dir: Path, tmp_path: Path) -> None:
    """REFEREE's and SIERA's learned_config.json before the format key: options under ``train``."""
    torch.manual_seed(0)
    config = RefereeConfig(encoder=str(tiny_encoder_dir), max_length=24)
    trainer = RefereeTrainer(config, out_dir=tmp_path)
    from metrics.learned.pairs import load_encoder

    model = RefereeModel(load_encoder(str(tiny_encoder_dir), max_length=24), [HUMAN_SIGNAL])
    trainer._save(model, tmp_path / "new", {}, [])
    items = _items()
    expected = load(tmp_path / "new").score(items)

    shutil.copytree(tmp_path / "new", tmp_path / "old")
    new = json.loads((tmp_path / "old" / CONFIG_FILE).read_text())
    old = {k: v for k, v in new.items() if k not in ("format", "config")}
    old.update(kind="referee", encoder=str(tiny_encoder_dir), train=new["config"])
    (tmp_path / "old" / CONFIG_FILE).write_text(json.dumps(old))
    assert read_metadata(tmp_path / "old")["config"] == new["config"]
    got = load(tmp_path / "old").score(items)
    assert [v for v, _ in got] == pytest.approx([v for v, _ in expected], abs=1e-6)


def test_siera_reads_its_former_option_name() -> None:
    stored = {**SieraConfig().to_dict(), "validation_fraction": 0.3}
    del stored["heldout_fraction"]
    assert SieraConfig.from_dict(stored).heldout_fraction == 0.3
    assert get_kind("siera").stored_config(stored).first_seed == 0


def test_a_directory_without_a_checkpoint_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="not a learned-metric checkpoint"):
        load(tmp_path)
