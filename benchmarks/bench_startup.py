"""Process start-up, before/after in the same run: ``manage.py help`` wall time and import profile, the heavy
libraries Django set-up imports, and the web process's memory before its first request.

Usage: ``python benchmarks/bench_startup.py [CHECKOUT ...] [--runs 5]`` (default: this checkout; name a
baseline and ``.`` to compare, e.g. ``bench_startup.py ../main .``). Each checkout is run with its own
``.venv/bin/python`` and, for the web process, its ``.venv/bin/daphne``, in subprocesses with the
development settings, no ``REDIS_URL`` and a throw-away ``RANKRATE_VAR_DIR``; nothing is written into the
checkouts but Python's bytecode caches.

Per checkout it prints:

* ``manage.py help``: median and best wall time of ``--runs`` runs, and peak RSS;
* ``python -X importtime manage.py help``: the total import time it reports and the ten slowest top-level
  packages (cumulative);
* the heavy libraries in ``sys.modules`` after ``django.setup()``;
* ``daphne config.asgi:application``: RSS of the server process once it listens, before any request.

Goals: ``manage.py help`` <= 0.8 s; web process <= 200 MB before the first request.
Prints figures; asserts nothing. The machine may be shared: compare before/after of the same run only.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import tempfile
import time
from collections import defaultdict
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "transformers", "spacy", "scipy", "sentence_transformers", "sacrebleu", "wn", "nltk",
         "textstat", "sklearn", "pandas", "numpy", "twisted")
SETUP_PROBE = (
    "import json, sys, django; django.setup(); "
    f"print(json.dumps(sorted(h for h in {HEAVY!r} if h in sys.modules)))"
)


def environment(var_dir: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "REDIS_URL")}
    env.update(DJANGO_SETTINGS_MODULE="config.settings.local", RANKRATE_VAR_DIR=var_dir)
    return env


def timed_help(checkout: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one ``manage.py help``, measured by a helper process."""
    helper = (
        "import json, resource, subprocess, sys, time; t = time.perf_counter(); "
        "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL); "
        "print(json.dumps([time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss]))"
    )
    python = str(checkout / ".venv" / "bin" / "python")
    out = subprocess.run([python, "-c", helper, python, "manage.py", "help"], cwd=checkout, env=env,
                         capture_output=True, text=True, check=True, timeout=120).stdout
    seconds, kb = json.loads(out.strip().splitlines()[-1])
    return float(seconds), kb / 1024


def import_profile(checkout: Path, env: dict[str, str]) -> tuple[float, list[tuple[str, float]]]:
    """Total import seconds and the slowest top-level packages from ``-X importtime``."""
    python = str(checkout / ".venv" / "bin" / "python")
    err = subprocess.run([python, "-X", "importtime", "manage.py", "help"], cwd=checkout, env=env,
                         capture_output=True, text=True, check=True, timeout=120).stderr
    per_package: dict[str, float] = defaultdict(float)
    total = 0.0
    for line in err.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = (part.strip() for part in line[len("import time:"):].split("|"))
        if not line.split("|")[2].startswith("  "):  # a top-level import (nested ones are indented)
            micros = int(cumulative)
            total += micros
            per_package[name.split(".")[0]] += micros
    slowest = sorted(per_package.items(), key=lambda item: -item[1])[:10]
    return total / 1e6, [(name, micros / 1e6) for name, micros in slowest]


def heavy_after_setup(checkout: Path, env: dict[str, str]) -> list[str]:
    python = str(checkout / ".venv" / "bin" / "python")
    out = subprocess.run([python, "-c", SETUP_PROBE], cwd=checkout, env=env, capture_output=True, text=True,
                         check=True, timeout=120).stdout
    loaded: list[str] = json.loads(out.strip().splitlines()[-1])
    return loaded


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def web_rss_mb(checkout: Path, env: dict[str, str]) -> tuple[float, float]:
    """RSS (MB) of ``daphne config.asgi:application`` once it accepts connections, and seconds until then."""
    port = free_port()
    daphne = str(checkout / ".venv" / "bin" / "daphne")
    start = time.perf_counter()
    server = subprocess.Popen([daphne, "-b", "127.0.0.1", "-p", str(port), "config.asgi:application"], cwd=checkout,
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()  # connects, sends nothing
                break
            except OSError:
                time.sleep(0.05)
        else:
            raise SystemExit(f"{checkout}: daphne did not listen within 60 s")
        ready = time.perf_counter() - start
        time.sleep(0.5)
        with open(f"/proc/{server.pid}/status") as status:
            kb = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
        return kb / 1024, ready
    finally:
        server.terminate()
        server.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkouts", nargs="*", type=Path, default=[REPO_ROOT])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as var_dir:
        env = environment(var_dir)
        for checkout in args.checkouts:
            checkout = checkout.resolve()
            if not (checkout / ".venv" / "bin" / "python").exists():
                print(f"\n== {checkout}: skipped (no .venv/bin/python there)")
                continue
            timed_help(checkout, env)  # warm the bytecode and file caches
            runs = [timed_help(checkout, env) for _ in range(args.runs)]
            seconds = [s for s, _ in runs]
            total, slowest = import_profile(checkout, env)
            rss, ready = web_rss_mb(checkout, env)
            print(f"\n== {checkout}")
            print(f"manage.py help: median {statistics.median(seconds):.2f} s, best {min(seconds):.2f} s "
                  f"({args.runs} runs), peak RSS {max(mb for _, mb in runs):.0f} MB")
            print(f"-X importtime: {total:.2f} s of imports; slowest top-level packages: "
                  + ", ".join(f"{name} {s:.2f}" for name, s in slowest))
            print(f"heavy libraries after django.setup(): {', '.join(heavy_after_setup(checkout, env)) or 'none'}")
            print(f"daphne config.asgi:application before the first request: {rss:.0f} MB RSS "
                  f"(listening after {ready:.1f} s)")
    print("\ngoals: manage.py help <= 0.8 s; web process <= 200 MB. Shared machine: compare within this run.")


if __name__ == "__main__":
    main()
