"""Load: annotators claiming, fetching and submitting against daphne, then an exactly-once check.

Usage: .venv/bin/python benchmarks/bench_load.py [--db sqlite|postgres|both] [--annotators 50] [--seconds 60]
       [--rates 50,100,200] [--open-seconds 20] [--checkout PATH ...] [--postgres-url postgres://...]
       [--redis-url redis://...] [--server-processes 1]

For each database (and each checkout) it prepares a fresh campaign (SOURCES sources x 3 outputs, two ratings
per output, every annotator a member, the slots left in the pool so `next` claims under load), starts daphne
on 127.0.0.1 (a free port; nothing else is reached) and runs
  (a) closed loop: one thread per annotator for --seconds, `next`, then the page data (fetch), then submit,
      with no think time;
  (b) open loop, on PostgreSQL: requests arriving on a fixed schedule at each of --rates requests/s for
      --open-seconds each, every arrival the next step (next, fetch or submit) of an idle annotator; a
      request's time counts from its scheduled arrival, so waiting for a free client counts too.
It stops by itself, stops daphne, and prints per phase p50/p95/p99 of next, fetch and submit, the errors,
the throughput, the server's CPU seconds per request (utime + stime of the daphne processes from /proc) and
where the rest of the machine's CPU went per request (this client, PostgreSQL's processes, everything else),
the PostgreSQL connections of the benchmark's database (pg_stat_activity, sampled every 0.5 s: most and
last), the load average of the machine, and the exactly-once check: every 201 is one stored annotation, no
assignment has two, no annotator two live assignments of one source.

--checkout PATH (repeatable) serves another checkout of the project (e.g. the untouched main as the
"before") with the same benchmark, one after the other in the same invocation; "." is this one. SQLite (the
embedded default, `make run`) uses a throw-away file; PostgreSQL the database of --postgres-url or
DATABASE_URL (campaigns with unique slugs; nothing is deleted). --redis-url serves with Redis as the channel
layer, cache and Celery broker (default: none, the in-memory layer and a throw-away file broker; with it,
the dashboards' broadcasts queued by the submits wait in the broker's `default` queue for a worker, so give
the benchmark a Redis index of its own). Exits 1 when a request fails or the exactly-once check does;
arrivals dropped above capacity are reported apart and do not fail the run.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import queue
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
OUTPUTS_PER_SOURCE = 3


@dataclass
class Tally:  # one phase
    fetch: list[float] = field(default_factory=list)
    submit: list[float] = field(default_factory=list)
    claim: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    created: list[tuple[int, int]] = field(default_factory=list)  # (assignment, annotation) of each 201
    repeats: int = 0
    idle: int = 0  # annotators who ran out of work
    dropped: int = 0  # open loop: arrivals never sent (the backlog at the end)
    no_work: int = 0  # open loop: arrivals never sent because every annotator was out of work
    lock: threading.Lock = field(default_factory=threading.Lock)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


# --- one database: prepare, serve, drive, check (run in a child process per database) ----------------


def prepare(annotators: int, sources: int, slug: str) -> dict[str, str]:
    import io

    from django.core.management import call_command
    from rest_framework.authtoken.models import Token

    from annotation.models import Campaign, CampaignAnnotator, User
    from annotation.services.assignments import campaign_ensure_slots
    from annotation.services.imports import campaign_import

    call_command("migrate", verbosity=0)
    lines = [
        json.dumps({"id": f"s{i}", "source": f"The rather long and winding complex sentence number {i} goes on.",
                    "outputs": [{"system": f"sys{k}", "text": f"Simple sentence {k} of source {i}."}
                                for k in range(OUTPUTS_PER_SOURCE)]})
        for i in range(sources)
    ]
    campaign_import(kind="jsonl", file=io.BytesIO("\n".join(lines).encode()), filename="load.jsonl",
                    campaign_slug=slug, analyse=False)
    campaign = Campaign.objects.get(slug=slug)
    campaign.ratings_per_output = 2
    campaign.save(update_fields=["ratings_per_output"])
    tokens: dict[str, str] = {}
    for i in range(annotators):
        user = User.objects.create_user(username=f"{slug}-a{i}", password=None, role=User.Role.ANNOTATOR)
        CampaignAnnotator.objects.create(campaign=campaign, annotator=user)
        tokens[user.username] = Token.objects.create(user=user).key
    campaign_ensure_slots(campaign=campaign)
    return tokens


def vacuum_where_autovacuum_is_off() -> str:
    """Earlier runs leave dead rows (claimed slots, replaced drafts) that autovacuum clears between runs; where
    it is off (as on some development servers), later runs would read more and more of them, so the tables
    the benchmark writes are vacuumed here instead. Not analysed: the planner knows of the new campaign only
    what the import itself asked for, as when a researcher starts a study right after importing it. Returns
    what was done, for the log."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW autovacuum")
        if cursor.fetchone()[0] == "on":
            return "autovacuum is on"
        for table in ("annotation_slot", "annotation_assignment", "annotation_annotation",
                      "annotation_outputjudgement"):
            cursor.execute(f"VACUUM {table}")
    return "autovacuum is off on this server: the benchmark's tables were vacuumed (not analysed) before the run"


def submit_extras(repo: Path) -> dict[str, Any]:
    """What this checkout's submit needs beyond the ratings: steps 1 and 2 reported as looked at, where it
    asks for that (older checkouts, measured as the "before", refuse the key)."""
    shapes = repo / "annotation" / "payloads.py"
    if not shapes.is_file():  # older checkouts kept it among the services
        shapes = repo / "annotation" / "services" / "payloads.py"
    if "steps_reviewed" in shapes.read_text():
        return {"steps_reviewed": {"categorise": "visited", "edits": "visited"}}
    return {}


class Annotator:
    """One annotator's client: a keep-alive connection and where they are in next -> fetch -> submit."""

    def __init__(self, port: int, token: str, slug: str, extra: dict[str, Any]) -> None:
        self.port, self.token, self.slug, self.extra = port, token, slug, extra
        self.headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
        self.conn: http.client.HTTPConnection | None = None
        self.step, self.pk, self.n = 0, 0, 0  # step 0: next, 1: fetch, 2: submit
        self.page: Any = {}
        self.out_of_work = False

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        if self.conn is None:
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            self.conn.request(method, path, body=None if body is None else json.dumps(body), headers=self.headers)
            response = self.conn.getresponse()
            data = response.read()
        except Exception:
            self.conn.close()
            self.conn = None
            raise
        return response.status, (json.loads(data) if data else None)

    def do_step(self, tally: Tally, started: float) -> None:
        """The next request of this annotator; its time counts from `started` (the arrival, open loop)."""
        try:
            if self.step == 0:
                status, data = self.call("POST", f"/api/campaigns/{self.slug}/next/")
                if status != 200:
                    raise RuntimeError(f"next: {status} {str(data)[:200]}")
                took = time.perf_counter() - started
                with tally.lock:
                    tally.claim.append(took)
                if data["assignment"] is None:
                    self.out_of_work = True
                    with tally.lock:
                        tally.idle += 1
                    return
                self.pk, self.step = data["assignment"], 1
            elif self.step == 1:
                status, self.page = self.call("GET", f"/api/assignments/{self.pk}/")
                if status != 200:
                    raise RuntimeError(f"fetch: {status} {str(self.page)[:200]}")
                with tally.lock:
                    tally.fetch.append(time.perf_counter() - started)
                self.step = 2
            else:
                answer = {"submit_key": f"{self.token[:8]}-{self.n}", **self.extra, "units": [
                    {"unit": u["id"], "category": "paraphrase", "rating": 50 + i, "rank": i + 1}
                    for i, u in enumerate(self.page["units"])]}
                status, saved = self.call("POST", f"/api/assignments/{self.pk}/submit/", answer)
                if status not in (200, 201):
                    raise RuntimeError(f"submit: {status} {str(saved)[:200]}")
                took = time.perf_counter() - started
                with tally.lock:
                    tally.submit.append(took)
                    if status == 201:
                        tally.created.append((self.pk, saved["id"]))
                    else:
                        tally.repeats += 1
                self.n += 1
                self.step = 0
        except Exception as exc:  # counted; the annotator starts over with `next` (it gets the same work back)
            self.step = 0
            with tally.lock:
                tally.errors.append(f"{type(exc).__name__}: {exc}")

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def closed_loop(annotators: list[Annotator], seconds: float, tally: Tally) -> float:
    """One thread per annotator, each request as soon as the previous answered, for `seconds`."""
    until = time.monotonic() + seconds

    def run(annotator: Annotator) -> None:
        while time.monotonic() < until and not annotator.out_of_work:
            annotator.do_step(tally, time.perf_counter())
            if len(tally.errors) > 1000:
                return

    started = time.monotonic()
    threads = [threading.Thread(target=run, args=(a,)) for a in annotators]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.monotonic() - started


def open_loop(annotators: list[Annotator], rate: float, seconds: float, tally: Tally) -> tuple[float, int]:
    """Arrivals every 1/rate s for `seconds`; each takes an idle annotator (waiting for one if none is) and
    sends its next request. A backlog not started within 10 s of the end is dropped and counted: the phase
    misses the 0-error goal, but the run fails only on request errors or the exactly-once check."""
    arrivals: queue.Queue[float | None] = queue.Queue()
    idle: queue.Queue[Annotator] = queue.Queue()
    for a in annotators:
        idle.put(a)
    stop_at = time.perf_counter() + seconds + 10.0

    spent: list[Annotator] = []  # out of work for good: they never go back to `idle`

    def worker() -> None:
        while (scheduled := arrivals.get()) is not None:
            if time.perf_counter() > stop_at:
                with tally.lock:
                    tally.dropped += 1
                continue
            annotator = None
            while annotator is None and len(spent) < len(annotators):
                with contextlib.suppress(queue.Empty):
                    annotator = idle.get(timeout=0.5)
            if annotator is None:  # the campaign ran out of work: nobody is left to send it
                with tally.lock:
                    tally.no_work += 1
                continue
            annotator.do_step(tally, scheduled)
            if annotator.out_of_work:
                with tally.lock:
                    spent.append(annotator)
            else:
                idle.put(annotator)

    workers = [threading.Thread(target=worker) for _ in annotators]
    for t in workers:
        t.start()
    started = time.perf_counter()
    n = int(rate * seconds)
    for k in range(n):
        due = started + k / rate
        time.sleep(max(0.0, due - time.perf_counter()))
        arrivals.put(due)
    for _ in workers:
        arrivals.put(None)
    for t in workers:
        t.join()
    return time.perf_counter() - started, n


def check(slug: str, created: list[tuple[int, int]]) -> dict[str, Any]:
    from django.db.models import Count

    from annotation.models import Annotation, Assignment

    submitted = Annotation.objects.filter(source__campaign__slug=slug, status=Annotation.Status.SUBMITTED)
    stored = set(submitted.values_list("assignment_id", "id"))
    doubled = (submitted.values("assignment_id").annotate(n=Count("id")).filter(n__gt=1).count())
    live_twice = (
        Assignment.objects.filter(campaign__slug=slug).exclude(status=Assignment.Status.RELEASED)
        .values("annotator_id", "source_id").annotate(n=Count("id")).filter(n__gt=1).count()
    )
    answered = set(created)
    return {
        "answered_201": len(created), "stored": len(stored),
        "lost": len(answered - stored), "unanswered_but_stored": len(stored - answered),
        "duplicate_201": len(created) - len(answered),
        "assignments_with_two_annotations": doubled, "annotator_source_live_twice": live_twice,
    }


def cpu_by_pid(pids: list[int]) -> dict[int, float]:
    """utime + stime of each process still running, from /proc."""
    ticks = os.sysconf("SC_CLK_TCK")
    seconds = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):  # a PostgreSQL backend that ended meanwhile
            continue
        seconds[pid] = (int(fields[11]) + int(fields[12])) / ticks  # fields 14 and 15 of stat(5)
    return seconds


def cpu_seconds(pids: list[int]) -> float:
    """utime + stime of the processes (the server), from /proc."""
    return sum(cpu_by_pid(pids).values())


def postgres_pids() -> list[int]:
    """Every PostgreSQL process on this machine (backends, writers, WAL): the database's share of the CPU."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "comm").read_text().strip().startswith("postgres"):
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


def machine_busy_seconds() -> float:
    """CPU seconds the whole machine spent busy (all cores: /proc/stat less idle and iowait)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


@dataclass
class CpuShares:
    """Where the machine's CPU went during a phase: the server, this client, PostgreSQL and the rest."""

    server: float = 0.0
    client: float = 0.0
    postgres: dict[int, float] = field(default_factory=dict)  # by process: backends come and go
    busy: float = 0.0
    ended: int = 0  # PostgreSQL processes that ended within the phase: their time is in "the rest"

    @classmethod
    def now(cls, server_pids: list[int]) -> CpuShares:
        own = os.times()
        return cls(cpu_seconds(server_pids), own.user + own.system, cpu_by_pid(postgres_pids()),
                   machine_busy_seconds())

    def since(self, start: CpuShares) -> CpuShares:
        """The phase's share of each; a PostgreSQL process that ended within it (a connection past its
        CONN_MAX_AGE) is not counted, so the database's figure is a lower bound."""
        spent = {pid: t - start.postgres.get(pid, 0.0) for pid, t in self.postgres.items()}
        return CpuShares(self.server - start.server, self.client - start.client, spent,
                         self.busy - start.busy, ended=len(start.postgres.keys() - self.postgres.keys()))

    @property
    def database(self) -> float:
        return sum(self.postgres.values())


class ConnectionSampler:
    """The database's connections (pg_stat_activity, this sampler's own left out) every 0.5 s."""

    def __init__(self, url: str) -> None:
        import psycopg2  # type: ignore[import-untyped]

        self.conn = psycopg2.connect(url)
        self.conn.autocommit = True
        self.samples: list[int] = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def count(self) -> int:
        with self.conn.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                           "AND pid <> pg_backend_pid()")
            row = cursor.fetchone()
        return int(row[0]) if row else 0

    def run(self) -> None:
        while not self.stopping.wait(0.5):
            self.samples.append(self.count())

    def take(self) -> tuple[int, int]:
        """(most, now) since the last take."""
        now = self.count()
        most = max([*self.samples, now])
        self.samples = []
        return most, now

    def close(self) -> None:
        self.stopping.set()
        self.thread.join()
        self.conn.close()


def report(tag: str, name: str, tally: Tally, elapsed: float, shares: CpuShares,
           conns: tuple[int, int] | None) -> None:
    ms = 1000.0
    requests = len(tally.claim) + len(tally.fetch) + len(tally.submit)
    per = ms / max(requests, 1)  # seconds of the phase -> ms per request
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"{tag} {name}: {elapsed:.1f} s, {requests} requests ({requests / elapsed:.1f}/s), "
          f"{len(tally.submit)} submits ({len(tally.submit) / elapsed:.1f}/s), errors {len(tally.errors)}"
          f"{f', {tally.dropped} arrivals dropped from the backlog (above capacity)' if tally.dropped else ''}"
          f", out of work {tally.idle}"
          f"{f' (arrivals with no work left to send: {tally.no_work}; raise --sources)' if tally.no_work else ''}"
          f"; server CPU {shares.server:.1f} s = {shares.server * per:.1f} ms/request"
          + (f"; PostgreSQL connections most {conns[0]}, at the end {conns[1]}" if conns else "")
          + f"; load average {load}", flush=True)
    rest = shares.busy - shares.server - shares.client - shares.database
    cores = (os.cpu_count() or 1) * elapsed
    print(f"{tag}   CPU per request: server {shares.server * per:.2f} ms, client {shares.client * per:.2f} ms, "
          f"PostgreSQL {'at least ' if shares.ended else ''}{shares.database * per:.2f} ms"
          f"{f' ({shares.ended} of its processes ended in the phase)' if shares.ended else ''}"
          f", rest of the machine {rest * per:.2f} ms; "
          f"machine busy {shares.busy / cores:.0%} of {os.cpu_count()} cores", flush=True)
    for label, values in (("next", tally.claim), ("fetch", tally.fetch), ("submit", tally.submit)):
        print(f"{tag}   {label:6} n={len(values):5}  p50 {percentile(values, 50) * ms:7.1f} ms  "
              f"p95 {percentile(values, 95) * ms:7.1f} ms  p99 {percentile(values, 99) * ms:7.1f} ms  "
              f"mean {statistics.fmean(values) * ms if values else float('nan'):7.1f} ms", flush=True)
    for error in sorted(set(tally.errors))[:5]:
        print(f"{tag}   error: {error}", flush=True)


def start_servers(repo: Path, processes: int, log: Any) -> tuple[list[subprocess.Popen[bytes]], list[int]]:
    servers: list[subprocess.Popen[bytes]] = []
    ports = [free_port() for _ in range(processes)]
    for port in ports:
        servers.append(subprocess.Popen(
            [str(Path(sys.executable).parent / "daphne"), "-b", "127.0.0.1", "-p", str(port),
             "config.asgi:application"],
            cwd=repo, env=os.environ.copy(), stdout=log, stderr=subprocess.STDOUT))
    deadline = time.monotonic() + 90
    for port, server in zip(ports, servers, strict=True):
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit(f"daphne did not start; see {log.name}") from None
                time.sleep(0.2)
    return servers, ports


def run_one(db: str, args: argparse.Namespace) -> int:
    import django

    django.setup()
    from django.conf import settings
    from django.db import connections

    repo = Path(args.repo).resolve()
    tag = f"[{args.label} {db}]"
    slug = f"load-{uuid.uuid4().hex[:8]}"
    engine = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
    rates = [float(r) for r in args.rates.split(",") if r] if db == "postgres" else []
    users = max(args.annotators, args.open_clients if rates else 0)
    t0 = time.perf_counter()
    tokens = list(prepare(users, args.sources, slug).values())
    vacuumed = vacuum_where_autovacuum_is_off() if db == "postgres" else ""
    connections.close_all()
    print(f"{tag} {repo} ({args.label}), database {engine}, campaign {slug}: {args.sources} sources x "
          f"{OUTPUTS_PER_SOURCE} outputs, {users} annotators (prepared in {time.perf_counter() - t0:.1f} s), "
          f"{args.server_processes} daphne process(es){f'; {vacuumed}' if vacuumed else ''}", flush=True)
    sampler = ConnectionSampler(os.environ["DATABASE_URL"]) if db == "postgres" else None
    log = open(Path(os.environ["RANKRATE_VAR_DIR"]) / "daphne.log", "wb")  # noqa: SIM115 (closed below)
    created: list[tuple[int, int]] = []
    failed = False
    over_capacity: list[str] = []  # open-loop phases whose backlog outran the server: a capacity figure, no error
    ran_out = False  # the campaign ran out of work: the phases after that measured less than asked
    servers: list[subprocess.Popen[bytes]] = []
    try:
        servers, ports = start_servers(repo, args.server_processes, log)
        pids = [s.pid for s in servers]
        time.sleep(1.0)
        if sampler:
            print(f"{tag} PostgreSQL connections with the server idle: {sampler.take()[1]}", flush=True)
        phases: list[tuple[str, float | None]] = [(f"closed loop, {args.annotators} annotators", None)]
        phases += [(f"open loop {rate:g} req/s", rate) for rate in rates]
        for name, rate in phases:
            tally = Tally()
            mine = tokens[:args.annotators] if rate is None else tokens[:args.open_clients]
            extra = submit_extras(repo)
            clients = [Annotator(ports[i % len(ports)], token, slug, extra) for i, token in enumerate(mine)]
            cpu0 = CpuShares.now(pids)
            if rate is None:
                elapsed = closed_loop(clients, args.seconds, tally)
            else:
                elapsed, _ = open_loop(clients, rate, args.open_seconds, tally)
            shares = CpuShares.now(pids).since(cpu0)
            for c in clients:
                c.close()
            report(tag, name, tally, elapsed, shares, sampler.take() if sampler else None)
            created += tally.created
            failed = failed or bool(tally.errors)
            over_capacity += [f"{name} ({tally.dropped} arrivals dropped)"] if tally.dropped else []
            ran_out = ran_out or bool(tally.idle or tally.no_work)
            time.sleep(2.0)  # let the server settle between phases
    finally:
        for server in servers:
            server.terminate()
        for server in servers:
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        log.close()
        if sampler:
            time.sleep(1.0)
            print(f"{tag} PostgreSQL connections after the server stopped: {sampler.take()[1]}", flush=True)
            sampler.close()
    result = check(slug, created)
    print(f"{tag} exactly once: {json.dumps(result)}")
    ok = not failed and result["lost"] == 0 and result["unanswered_but_stored"] == 0 and \
        result["duplicate_201"] == 0 and result["assignments_with_two_annotations"] == 0 and \
        result["annotator_source_live_twice"] == 0
    print(f"{tag} OK: 0 errors and nothing lost or doubled" if ok else
          f"{tag} FAILED: request errors, or annotations lost or doubled (above)", flush=True)
    if ran_out:
        print(f"{tag} the campaign ran out of work (out of work above): later figures cover fewer requests than "
              f"asked; run again with a larger --sources", flush=True)
    if over_capacity:
        print(f"{tag} above capacity (not counted as failure; those phases miss the 0-error goal): "
              f"{', '.join(over_capacity)}", flush=True)
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default=None,
                        help="default: postgres when a PostgreSQL URL is known, else sqlite")
    parser.add_argument("--annotators", type=int, default=50, help="closed loop: annotators (one thread each)")
    parser.add_argument("--seconds", type=float, default=60.0, help="closed loop: duration")
    parser.add_argument("--rates", default="50,100,200", help="open loop (PostgreSQL): arrivals per second")
    parser.add_argument("--open-seconds", type=float, default=20.0, help="open loop: duration of each rate")
    parser.add_argument("--open-clients", type=int, default=100, help="open loop: annotators (and client threads)")
    parser.add_argument("--sources", type=int, default=8000,
                        help="enough work for the whole run (each source is two assignments)")
    parser.add_argument("--server-processes", type=int, default=1,
                        help="daphne processes (each on its own port; the clients are spread over them)")
    parser.add_argument("--checkout", action="append", default=[],
                        help="serve this checkout (repeatable, in order; default: this one)")
    parser.add_argument("--postgres-url", default=os.environ.get("DATABASE_URL", "")
                        if os.environ.get("DATABASE_URL", "").startswith("postgres") else "")
    parser.add_argument("--redis-url", default="", help="Redis for channel layer, cache and broker (default: none)")
    parser.add_argument("--child", choices=["sqlite", "postgres"], help=argparse.SUPPRESS)
    parser.add_argument("--repo", default=str(REPO), help=argparse.SUPPRESS)
    parser.add_argument("--label", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return run_one(args.child, args)
    chosen = args.db or ("postgres" if args.postgres_url else "sqlite")
    dbs = ["sqlite", "postgres"] if chosen == "both" else [chosen]
    if "postgres" in dbs and not args.postgres_url:
        parser.error("PostgreSQL needs --postgres-url or DATABASE_URL=postgres://...")
    checkouts = [Path(c).resolve() for c in (args.checkout or [str(REPO)])]
    for checkout in checkouts:
        if not (checkout / "manage.py").is_file():
            parser.error(f"--checkout {checkout}: no manage.py there")
    print(f"{os.cpu_count()} CPU cores on this machine (shared: the server, the client threads and anything "
          f"else running compete for them); loopback only; load average {os.getloadavg()[0]:.2f}.", flush=True)
    lanes = {k: os.environ.get(k, "unset, the checkout's default")
             for k in ("HTTP_MAX_CONCURRENCY", "HTTP_ANNOTATION_CONCURRENCY")}
    print("Request threads per web process: " + "; ".join(f"{k}={v}" for k, v in lanes.items()), flush=True)
    status = 0
    for db in dbs:
        for checkout in checkouts:
            var = tempfile.mkdtemp(prefix=f"rankrate-load-{db}-")
            env = {k: v for k, v in os.environ.items()
                   if k not in ("REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND", "DATABASE_URL",
                                "PYTHONPATH")}
            env.update({"DJANGO_SETTINGS_MODULE": "config.settings.local", "DEBUG": "0", "RANKRATE_VAR_DIR": var,
                        "LOG_LEVEL": "WARNING", "PYTHONPATH": str(checkout),
                        "DATABASE_URL": args.postgres_url if db == "postgres" else f"sqlite:///{var}/load.sqlite3"})
            if args.redis_url:
                env["REDIS_URL"] = args.redis_url
            label = checkout.name if len(checkouts) > 1 else "this checkout"
            child = subprocess.run(
                [sys.executable, __file__, "--child", db, "--repo", str(checkout), "--label", label,
                 "--annotators", str(args.annotators), "--seconds", str(args.seconds), "--rates", args.rates,
                 "--open-seconds", str(args.open_seconds), "--open-clients", str(args.open_clients),
                 "--sources", str(args.sources), "--server-processes", str(args.server_processes)],
                cwd=checkout, env=env, check=False)
            status = status or child.returncode
    return status


if __name__ == "__main__":
    if "--repo" in sys.argv:
        sys.path.insert(0, sys.argv[sys.argv.index("--repo") + 1])
    else:
        sys.path.insert(0, str(REPO))
    sys.exit(main())
