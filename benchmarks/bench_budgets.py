"""Heavy reads against everyone else's pages: /login/ latency while researchers read metrics comparisons.

Usage: .venv/bin/python benchmarks/bench_budgets.py [--sources 300] [--n-boot 2000] [--readers 4]
       [--checkout PATH ...]

For each checkout ("." is this one; e.g. the untouched main as the "before") it prepares, in a throw-away
SQLite database (the embedded default, `make run`), a SimpEval-style campaign of --sources sources x 6 systems
x 3 raters with references and stored fkgl, bleu, gleu and sari scores, starts daphne on 127.0.0.1 (a free
port; nothing else is reached) and measures the time of GET /login/:
  (a) idle: 20 requests;
  (b) while --readers researchers' requests GET /api/campaigns/<slug>/metrics/?n_boot=... run at once, each
      with a different n_boot (--n-boot, --n-boot - 1, ...: no cache can answer them), /login/ every 0.1 s
      until they end;
  (c) the same, every reader asking for --n-boot (the same read four times).
It prints per phase the /login/ p50/p95/max and, for the heavy reads, their statuses and times.
"""

from __future__ import annotations

import argparse
import http.client
import io
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

SYSTEMS = ("copy", "trim", "random", "alpha", "beta", "gamma")
WORDS = ["the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog", "while", "seven", "tall", "men",
         "watch", "from", "far", "away"]


def prepare(sources: int) -> None:
    """Runs inside the checkout measured (its own code and migrations); prints {"slug", "token"}."""
    import django

    django.setup()
    from django.core.management import call_command
    from rest_framework.authtoken.models import Token

    from annotation.models import Campaign, User
    from annotation.rules import sentence_key
    from annotation.services.imports import campaign_import
    from metrics.services.meta_evaluation import campaign_meta_evaluate

    call_command("migrate", verbosity=0)
    rows = ["original_id,original,generation,system,sentence_type,rating_1,rating_2,rating_3"]
    references: dict[str, list[str]] = {}
    for s in range(sources):
        words = [WORDS[(s * 7 + k) % len(WORDS)] for k in range(13)] + [f"n{s}"]
        original = " ".join(words)
        references[sentence_key(original)] = [" ".join(words[:9]) + ".", " ".join(words[2:12]) + "."]
        for k, system in enumerate(SYSTEMS):
            text = " ".join(words[k: 8 + k]) + "."
            ratings = [str((s * 13 + k * 29 + r * 17) % 100) for r in range(3)]
            kind = ("Paraphrases", "Deletions", "Splittings")[(s + k) % 3]
            rows.append(f"s{s},{original},{text},{system},{kind},{','.join(ratings)}")
    campaign_import(kind="simpeval", file=io.BytesIO("\n".join(rows).encode()), filename="bench.csv",
                    campaign_slug="bench", references=references, analyse=False)
    campaign = Campaign.objects.get(slug="bench")
    researcher = User.objects.create_user(username="bench-researcher", password="x", role="researcher")
    campaign.owners.add(researcher)
    campaign_meta_evaluate(campaign=campaign, metric="fkgl,bleu,gleu,sari", n_boot=0)  # stores the scores
    print(json.dumps({"slug": campaign.slug, "token": Token.objects.create(user=researcher).key}))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get(port: int, path: str, token: str | None = None) -> tuple[int, float]:
    started = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    conn.request("GET", path, headers={"Authorization": f"Token {token}"} if token else {})
    response = conn.getresponse()
    response.read()
    conn.close()
    return response.status, time.perf_counter() - started


def quantiles(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"p50 {statistics.median(ordered):.3f} s, p95 {p95:.3f} s, max {ordered[-1]:.3f} s (n={len(ordered)})"


def logins_during(port: int, token: str, slug: str, n_boots: list[int]) -> str:
    heavy: list[tuple[int, int, float]] = []

    def read(n_boot: int) -> None:
        status, seconds = get(port, f"/api/campaigns/{slug}/metrics/?n_boot={n_boot}", token)
        heavy.append((n_boot, status, seconds))

    threads = [threading.Thread(target=read, args=(n,)) for n in n_boots]
    for thread in threads:
        thread.start()
    logins: list[float] = []
    while any(t.is_alive() for t in threads) or not logins:
        logins.append(get(port, "/login/")[1])
        time.sleep(0.1)
    for thread in threads:
        thread.join()
    reads = ", ".join(f"n_boot={n}: {status} in {seconds:.2f} s" for n, status, seconds in sorted(heavy))
    return f"/login/ {quantiles(logins)}; heavy reads: {reads}"


def measure(checkout: Path, args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-budgets-") as tmp:
        env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
        env.update(RANKRATE_VAR_DIR=tmp, DJANGO_SETTINGS_MODULE="config.settings.local", DEBUG="0",
                   PYTHONPATH=str(checkout))
        t0 = time.perf_counter()
        out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--prepare", "--sources",
                              str(args.sources)], cwd=checkout, env=env, check=True, capture_output=True, text=True)
        info = json.loads(out.stdout.strip().splitlines()[-1])
        port = free_port()
        log = open(Path(tmp) / "daphne.log", "wb")  # noqa: SIM115 (closed below)
        server = subprocess.Popen([str(Path(sys.executable).parent / "daphne"), "-b", "127.0.0.1", "-p", str(port),
                                   "config.asgi:application"], cwd=checkout, env=env, stdout=log,
                                  stderr=subprocess.STDOUT)
        try:
            for _ in range(200):
                try:
                    get(port, "/login/")
                    break
                except OSError:
                    time.sleep(0.1)
            tag = f"[{checkout}]"
            print(f"{tag} campaign of {args.sources} sources x {len(SYSTEMS)} systems x 3 raters, 4 metrics "
                  f"(prepared in {time.perf_counter() - t0:.1f} s)", flush=True)
            print(f"{tag} idle: /login/ {quantiles([get(port, '/login/')[1] for _ in range(20)])}", flush=True)
            distinct = [args.n_boot - i for i in range(args.readers)]
            print(f"{tag} {args.readers} different heavy reads at once: "
                  f"{logins_during(port, info['token'], info['slug'], distinct)}", flush=True)
            same = [args.n_boot - 100] * args.readers
            print(f"{tag} {args.readers} identical heavy reads at once: "
                  f"{logins_during(port, info['token'], info['slug'], same)}", flush=True)
        finally:
            server.terminate()
            server.wait(timeout=20)
            log.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sources", type=int, default=300)
    parser.add_argument("--n-boot", type=int, default=2000)
    parser.add_argument("--readers", type=int, default=4)
    parser.add_argument("--checkout", action="append", default=[])
    parser.add_argument("--prepare", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.prepare:
        prepare(args.sources)
        return 0
    for checkout in args.checkout or ["."]:
        measure(Path(checkout).resolve(), args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
