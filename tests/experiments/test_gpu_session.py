"""The prepared GPU session (issue 47): the bundle survives its parts and degrades when the last ones are
missing, the run commands are ones ``research_config`` accepts, the delivering calls fit the `run` tool's
limits, and the epoch lines the runs print are the ones the session reads back. No training, no data files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from experiments import gpu_session, research_config
from metrics.learned.callbacks import ProgressEvent


def _bundle(tmp_path: Path) -> tuple[Path, dict[str, torch.Tensor]]:
    data = tmp_path / "data"
    (data / "simpeval").mkdir(parents=True)
    (data / "simpeval" / "simpeval_past.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    encoder = tmp_path / "mpnet"
    encoder.mkdir()
    (encoder / "config.json").write_text('{"model_type": "mpnet"}', encoding="utf-8")
    weights = {"w": torch.randn(300, 300), "ids": torch.arange(4)}
    save_file(weights, str(encoder / "model.safetensors"))
    gpu_session.build_bundle(tmp_path / "bundle", data=data, mpnet=encoder, minilm=None, site=(), part_mib=0.05)
    return tmp_path / "bundle", weights


def test_the_bundle_comes_back_whole_with_fp32_weights_and_degrades_without_its_last_part(tmp_path: Path) -> None:
    bundle, weights = _bundle(tmp_path)
    manifest = json.loads((bundle / gpu_session.MANIFEST).read_text(encoding="utf-8"))
    assert len(manifest["parts"]) > 2 and manifest["has_mpnet"]
    found = gpu_session.unpack(bundle, tmp_path / "whole", log=lambda _: None)
    assert found["problems"] == [] and found["data"] is not None and found["mpnet"] is not None
    restored = load_file(str(Path(found["mpnet"]) / "model.safetensors"))
    assert restored["w"].dtype == torch.float32 and torch.allclose(restored["w"], weights["w"], rtol=1e-3, atol=1e-3)
    assert torch.equal(restored["ids"], weights["ids"])

    (bundle / manifest["parts"][-1]["name"]).unlink()  # the machine went cold before the last call
    partial = gpu_session.unpack(bundle, tmp_path / "partial", log=lambda _: None)
    assert partial["mpnet"] is None and partial["data"] is not None and "missing" in partial["problems"][0]


def test_the_carried_packages_keep_their_metadata(tmp_path: Path) -> None:
    # metrics.suite.fkgl checks textstat's pin with importlib.metadata.version: the package folder alone fails
    (tmp_path / "data").mkdir()
    gpu_session.build_bundle(tmp_path / "bundle", data=tmp_path / "data", mpnet=None, minilm=None,
                             site=("textstat", "pyphen"))
    site = gpu_session.unpack(tmp_path / "bundle", tmp_path / "unpacked", log=lambda _: None)["site"]
    assert [p.name for p in site.glob("textstat-*.dist-info")] == ["textstat-0.7.3.dist-info"]
    assert (site / "textstat-0.7.3.dist-info" / "METADATA").is_file() and (site / "pyphen").is_dir()
    probe = ("import sys; sys.path[:0] = sys.argv[1:]; from importlib.metadata import version; "
             "from metrics.suite.fkgl import flesch_kincaid_grade as grade; "
             "g = grade('The cat sat on the mat. It was happy.'); "
             "print(version('textstat'), sys.modules['textstat'].__file__, g)")
    # -I -S: no site-packages, no PYTHONPATH: textstat and its metadata come from the unpacked site/ alone
    found = subprocess.run([sys.executable, "-I", "-S", "-c", probe, str(site), str(gpu_session.REPO)],
                           capture_output=True, text=True, check=True, timeout=60).stdout.split()
    assert found[0] == "0.7.3" and Path(found[1]).is_relative_to(site) and float(found[2]) == -1.0


def test_the_run_commands_are_well_formed_and_start_with_lens(tmp_path: Path) -> None:
    runs = gpu_session.run_commands(gpu_session.KINDS, [0, 1, 2], profile="research", device="cuda", threads=1,
                                    out=tmp_path, extra=["--data", "/data"])
    assert [(r.kind, r.seed) for r in runs][:3] == [("lens", 0), ("lens", 1), ("lens", 2)] and len(runs) == 9
    assert len({r.json for r in runs}) == 9
    for run in runs:
        assert run.command[1:4] == ["-m", "experiments.research_config", "test"]
        args = research_config.parse(run.command[3:])
        assert (args.kind, args.seeds, args.device, args.profile) == (run.kind, [run.seed], "cuda", "research")
        assert args.options == {} and args.data == Path("/data")  # the research configuration as declared


@pytest.mark.parametrize("parts", [1, 5])
def test_the_delivering_calls_fit_the_run_tool(parts: int) -> None:
    manifest = {"parts": [{"name": f"bundle.part{i:02d}"} for i in range(1, parts + 1)]}
    calls = gpu_session.call_plan(Path(".device"), manifest)
    assert len(calls) == parts and "gpu_session.sh" in calls[-1]["command"]
    for call in calls:
        assert len(call["command"]) <= 2000 and len(call["carry"]) <= 8 and 1 <= call["timeout_s"] <= 600


def test_the_session_reads_the_epoch_lines_the_runs_print(capsys: pytest.CaptureFixture[str]) -> None:
    clock = research_config.EpochClock()
    for epoch in (1, 2):
        clock.on_progress(ProgressEvent(kind="epoch", epoch=epoch, step=10, total_steps=10 * epoch, loss=0.5))
    lines = gpu_session.epoch_lines(capsys.readouterr().out)
    assert [(e["epoch"], e["steps"]) for e in lines] == [(1, 10), (2, 20)]


def test_the_table_shows_the_interval_and_the_system_level(tmp_path: Path) -> None:
    figures = {"seed": 0, "train_seconds": 9.0, "seconds_per_epoch": [3.0],
               "simpeval_2022": {"paraphrase": 0.1, "split": 0.2, "deletion": 0.3, "all": 0.25},
               "simpeval_2022_ci": [0.125, 0.375], "simpeval_2022_without_human1": {"all": 0.2},
               "simpeval_2022_system": {"pairwise_accuracy": 0.8, "agreeing_pairs": 12, "pairs": 15, "pearson": 0.75,
                                        "means": {}},
               "simpeval_2022_scores": [["s22:0", "Muss", 0.5]],
               "simplicity_da_434": {"fluency": 0.1, "meaning": 0.2, "simplicity": 0.3},
               "simpda_2022": {"adequacy": 0.1, "fluency": 0.2, "simplicity": 0.3}}
    (tmp_path / "lens-seed0.json").write_text(json.dumps({"profile": "research", "runs": [figures]}), encoding="utf-8")
    run = gpu_session.Run("lens", 0, [], tmp_path / "lens-seed0.json", tmp_path / "lens-seed0.log", status="done")
    row = gpu_session.run_row(run)
    assert row["simpeval_2022_ci"] == [0.125, 0.375] and row["simpeval_2022_system"]["pairs"] == 15
    assert "simpeval_2022_scores" not in row  # they stay in the run's JSON (runs.tar.gz)
    table = gpu_session.summary_table([row])
    assert "τ_all 95% CI" in table.splitlines()[0] and "[0.125, 0.375]" in table and "0.800/0.750" in table
    assert "lens: τ_all 0.250, sys acc 0.800, sys r 0.750 over 1 seed(s)" in table
