"""Slow clients against a live app: do they get closed, and does everyone else still get answered?

    python -m bench.slow_clients [--connections 1000] [--timeout 15] [--no-deadlines] [--json]

`python app.py` in its own process over the fixture excerpt (indexed once into a temporary
folder), with header_timeout_s = body_timeout_s = --timeout, max_connections above the attack and
no bound per client (as if every slow socket came from its own address: the worst case; one
address alone is cut at max_connections_per_client). Then:

1. idle: /retrieve latency, one question after another;
2. the attack: --connections sockets, half sending half their headers and half sending their
   headers and half a /retrieve body, then nothing; the same /retrieve loop runs while all of
   them are still open;
3. how long each slow socket stayed open until the server closed it, and the server process's
   open file descriptors before, at the peak and after (1 s after the last close, or at 2 x
   --timeout, with the bench's sockets still open: what the server let go of by itself).

`--no-deadlines` serves with the deadlines off (uvicorn as before): the "before" figures; the
sockets that the server never closes are closed by the bench after 2 x --timeout.
"""
from __future__ import annotations

import argparse
import json
import os
import selectors
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.requests import build_index, post
from bench.requests import start_app as _start_app

BODY = json.dumps({"query": "How do I create an application with ACE Tools?"}).encode()


def fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def retrieve_p50(url: str, n: int, until: float | None = None) -> tuple[float, int]:
    """p50 ms of up to n /retrieve calls in a row (stopping at `until`), and the errors."""
    times, errors = [], 0
    for _ in range(n):
        if until is not None and time.monotonic() >= until:
            break
        status, secs, _ = post(url + "/retrieve", BODY)
        times.append(secs * 1000)
        errors += status != 200
    return (statistics.median(times) if times else float("nan")), errors


def attack(port: int, n: int) -> tuple[list[socket.socket], float]:
    socks = []
    half_head = b"POST /retrieve HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-"
    half_body = (b"POST /retrieve HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n" % len(BODY)) + BODY[:10]
    t0 = time.monotonic()
    for i in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=30)
        s.sendall(half_head if i % 2 == 0 else half_body)
        s.setblocking(False)
        socks.append(s)
    return socks, t0


def watch_closes(socks: list[socket.socket], opened: float, give_up_s: float) -> list[float | None]:
    """Seconds from the attack's start until the server closed each socket (None: still open at give_up_s)."""
    sel = selectors.DefaultSelector()
    for i, s in enumerate(socks):
        sel.register(s, selectors.EVENT_READ, i)
    closed: list[float | None] = [None] * len(socks)
    left = len(socks)
    while left and time.monotonic() - opened < give_up_s:
        for key, _ in sel.select(timeout=0.1):
            try:
                data = key.fileobj.recv(4096)
            except OSError:
                data = b""
            if not data:
                closed[key.data] = time.monotonic() - opened
                sel.unregister(key.fileobj)
                left -= 1
    return closed


def run(args) -> dict:
    work = Path(tempfile.mkdtemp(prefix="dgrag-bench-slow-"))
    db = build_index(work)
    timeout = 0 if args.no_deadlines else args.timeout
    os.environ.update({"DGRAG_HEADER_TIMEOUT_S": str(timeout), "DGRAG_BODY_TIMEOUT_S": str(timeout),
                       "DGRAG_MAX_CONNECTIONS": str(args.connections * 2 + 100),
                       "DGRAG_MAX_CONNECTIONS_PER_CLIENT": "0"})
    proc, url = _start_app(db)
    port = int(url.rsplit(":", 1)[1])
    try:
        retrieve_p50(url, 3)  # warm
        idle_ms, idle_err = retrieve_p50(url, args.requests)
        fds_before = fds(proc.pid)
        socks, t0 = attack(port, args.connections)
        fds_peak = fds(proc.pid)
        # while every slow socket is still open (a margin before the first deadline)
        under_ms, under_err = retrieve_p50(url, args.requests, until=t0 + max(1.0, args.timeout * 0.8))
        closed = watch_closes(socks, t0, args.timeout * 2)
        time.sleep(1.0)
        fds_after = fds(proc.pid)  # the bench's own sockets still open: what the server let go of itself
        for sock in socks:
            sock.close()
        after_ms, _ = retrieve_p50(url, args.requests)
    finally:
        proc.terminate()
        proc.wait(30)
    shut = sorted(c for c in closed if c is not None)
    return {"connections": args.connections, "timeout_s": timeout, "deadlines": not args.no_deadlines,
            "retrieve_p50_ms": {"idle": round(idle_ms, 1), "under_attack": round(under_ms, 1),
                                "after": round(after_ms, 1), "ratio": round(under_ms / idle_ms, 2)},
            "retrieve_errors": {"idle": idle_err, "under_attack": under_err},
            "closed_by_server": len(shut), "still_open_at_2x_timeout": len(closed) - len(shut),
            "closed_after_s": {"min": round(shut[0], 2), "p50": round(statistics.median(shut), 2),
                               "max": round(shut[-1], 2)} if shut else None,
            "server_fds": {"before": fds_before, "peak": fds_peak, "after": fds_after}}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--connections", type=int, default=1000)
    ap.add_argument("--timeout", type=float, default=15.0, help="header_timeout_s and body_timeout_s")
    ap.add_argument("--requests", type=int, default=20, help="/retrieve calls per phase")
    ap.add_argument("--no-deadlines", action="store_true", help="serve with the deadlines off (before)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    out = run(args)
    print(json.dumps(out, indent=None if args.json else 2), file=sys.stdout)
    return out


if __name__ == "__main__":
    main()
