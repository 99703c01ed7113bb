"""Oversized request bodies against daphne: its memory while they are refused, and the time to the refusal.

Starts ``daphne config.asgi:application`` on a free port with the embedded default (development settings,
SQLite and everything else under a throw-away ``RANKRATE_VAR_DIR``), then, one at a time:

* ``declared``: an anonymous ``POST /api/auth/token/`` that declares a ``Content-Length`` of 500 MiB and
  sends its body as fast as the server takes it;
* ``chunked``: the same endpoint, 800 MiB in chunked transfer encoding (no ``Content-Length``).

The bodies come from one reused 1 MiB buffer, never held whole by the client. For each it prints the
answer's status (or how the connection ended), the seconds until the answer, the bytes the client got to
send, and the RSS of a fresh daphne process (``VmRSS``, sampled every 20 ms) before, at its peak, and 3 s
after the answer.

``--baseline`` runs the same requests against a second daphne with ``MAX_BODY_BYTES=0`` (no cap: daphne's and
Django's own behaviour, as before issue 43), on the same machine in the same run.

    .venv/bin/python benchmarks/bench_bodies.py [--baseline] [--declared-mib 500] [--chunked-mib 800]
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MiB = 1024 * 1024
PIECE = b"x" * MiB


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


class Sampler(threading.Thread):
    """The peak RSS of ``pid`` since the last :meth:`reset`."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.peak = 0.0
        self.running = True

    def reset(self) -> None:
        self.peak = rss_mib(self.pid)

    def run(self) -> None:
        while self.running:
            self.peak = max(self.peak, rss_mib(self.pid))
            time.sleep(0.02)


def server_env(var: str, max_body_bytes: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND", "DATABASE_URL", "MAX_BODY_BYTES")}
    env.update({"DJANGO_SETTINGS_MODULE": "config.settings.local", "DEBUG": "0", "RANKRATE_VAR_DIR": var,
                "LOG_LEVEL": "WARNING", "DATABASE_URL": f"sqlite:///{var}/db.sqlite3", "PYTHONPATH": str(REPO)})
    if max_body_bytes is not None:
        env["MAX_BODY_BYTES"] = max_body_bytes
    return env


def start_daphne(env: dict[str, str]) -> tuple[subprocess.Popen[bytes], int]:
    """A fresh daphne process (the database is migrated already)."""
    var = env["RANKRATE_VAR_DIR"]
    python = Path(sys.executable)
    port = free_port()
    log = open(Path(var) / "daphne.log", "wb")  # noqa: SIM115  (the server's for its lifetime)
    server = subprocess.Popen([str(python.parent / "daphne"), "-b", "127.0.0.1", "-p", str(port),
                               "config.asgi:application"], cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 90
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return server, port
        except OSError:
            if time.monotonic() > deadline or server.poll() is not None:
                raise SystemExit(f"daphne did not start; see {log.name}") from None
            time.sleep(0.2)


def body(total_mib: int, chunked: bool) -> Iterator[bytes]:
    for _ in range(total_mib):
        yield b"%x\r\n%s\r\n" % (MiB, PIECE) if chunked else PIECE
    if chunked:
        yield b"0\r\n\r\n"


def send_request(port: int, total_mib: int, chunked: bool) -> tuple[str, float, int]:
    """(the answer's status line or how the connection ended, seconds to it, bytes of body sent)."""
    framing = b"Transfer-Encoding: chunked" if chunked else b"Content-Length: %d" % (total_mib * MiB)
    head = (b"POST /api/auth/token/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"%s\r\nConnection: close\r\n\r\n" % framing)
    connection = socket.create_connection(("127.0.0.1", port), timeout=300)
    start = time.monotonic()
    sent = 0
    try:
        connection.sendall(head)
        for piece in body(total_mib, chunked):
            connection.setblocking(False)
            try:
                if connection.recv(1, socket.MSG_PEEK):  # the server answered before the body ended
                    break
            except BlockingIOError:
                pass
            connection.setblocking(True)
            connection.sendall(piece)
            sent += len(piece)
        connection.setblocking(True)
        answer = b""
        while b"\r\n" not in answer:
            more = connection.recv(65536)
            if not more:
                break
            answer += more
    except (BrokenPipeError, ConnectionResetError) as exc:
        try:  # what the server wrote before it closed is still readable
            connection.setblocking(True)
            answer = connection.recv(65536)
        except OSError:
            return f"connection ended without an answer ({type(exc).__name__})", time.monotonic() - start, sent
    finally:
        elapsed = time.monotonic() - start
        connection.close()
    status = answer.split(b"\r\n", 1)[0].decode(errors="replace") or "connection closed without an answer"
    return status, elapsed, sent


def measure(label: str, var: str, max_body_bytes: str | None, args: argparse.Namespace) -> None:
    """Each request against a fresh daphne process, so that one's memory does not hide the next's."""
    env = server_env(var, max_body_bytes)
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=REPO, env=env, check=True)
    for name, mib, chunked in (("declared", args.declared_mib, False), ("chunked", args.chunked_mib, True)):
        server, port = start_daphne(env)
        sampler = Sampler(server.pid)
        sampler.start()
        try:
            time.sleep(1)
            before = rss_mib(server.pid)
            sampler.reset()
            status, seconds, sent = send_request(port, mib, chunked)
            time.sleep(3)
            print(f"{label:<9} {name:<8} {mib:>4} MiB  {status[:34]:<34} {seconds:7.2f} s  sent {sent / MiB:7.1f} MiB  "
                  f"RSS before {before:6.0f}  peak {sampler.peak:6.0f}  3 s after {rss_mib(server.pid):6.0f} MiB",
                  flush=True)
        finally:
            sampler.running = False
            server.terminate()
            server.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--declared-mib", type=int, default=500)
    parser.add_argument("--chunked-mib", type=int, default=800)
    parser.add_argument("--baseline", action="store_true", help="also run with MAX_BODY_BYTES=0 (no cap)")
    args = parser.parse_args()
    print(f"daphne on {os.cpu_count()} CPUs; POST /api/auth/token/ anonymous; RSS of the daphne process", flush=True)
    with tempfile.TemporaryDirectory(prefix="rankrate-bodies-") as var:
        measure("capped", var, None, args)
    if args.baseline:
        with tempfile.TemporaryDirectory(prefix="rankrate-bodies-") as var:
            measure("no cap", var, "0", args)


if __name__ == "__main__":
    main()
