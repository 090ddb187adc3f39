"""P8: query serving from read-only copies of the one index file behind a load balancer.

Each replica is a plain `python app.py` process given nothing but its copy of the file, in
a directory it cannot write to, and one core of this machine (standing in for a machine of
its own). Clients spread `/retrieve` requests round-robin over the
replicas (what any HTTP load balancer does); the figure is throughput with 1 replica vs N.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_replica(db: Path, core: int | None = None, threads: int = 1) -> tuple[subprocess.Popen, str]:
    """`python app.py` on a free port, serving `db`, pinned to one core when given (a
    replica stands for one machine); returns once it answers."""
    port = _free_port()
    env = {**os.environ, "DGRAG_DB_PATH": str(db), "OMP_NUM_THREADS": str(threads),
           "MKL_NUM_THREADS": str(threads), "OPENBLAS_NUM_THREADS": str(threads), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen([sys.executable, str(ROOT / "app.py"), "--port", str(port)], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if core is not None and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(proc.pid, {core})  # before it has loaded anything worth moving
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True).start()  # drain stderr
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 180
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("replica exited: " + "".join(lines)[-2000:])
        try:
            urllib.request.urlopen(url + "/health", timeout=2).read()
            return proc, url
        except OSError:
            time.sleep(0.5)
    _stop([proc])
    raise RuntimeError("replica did not start in 180 s")


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def _retrieve(url: str, query: str) -> None:
    req = urllib.request.Request(url + "/retrieve", data=json.dumps({"query": query}).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        if resp.status != 200 or not json.loads(resp.read()).get("chunks"):
            raise RuntimeError(f"bad answer from {url}")


def _throughput(urls: list[str], queries: list[str], clients: int) -> float:
    for u in urls:
        _retrieve(u, "warm up")  # compile and load once per replica, outside the timing
    t = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(lambda iq: _retrieve(urls[iq[0] % len(urls)], iq[1]), enumerate(queries)))
    return len(queries) / (time.perf_counter() - t)


def read_only_copy(db: Path, folder: Path) -> Path:
    """What a user ships to a replica: `dgrag snapshot`'s consistent copy, in a folder nobody
    can write to (chmod 555, the file 444)."""
    from dgrag.store import Store

    if folder.exists():  # left by an interrupted run
        _writable(folder)
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    out = folder / "index.db"
    with Store(db, readonly=True) as st:
        st.copy_to(out)
    out.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
    return out


def _writable(folder: Path) -> None:
    folder.chmod(stat.S_IRWXU)
    for f in folder.iterdir():
        f.chmod(stat.S_IRUSR | stat.S_IWUSR)


def p8(db: Path, work: Path, queries: list[str], replicas: int = 2, clients_per_replica: int = 4) -> dict:
    from dgrag.retrieve.loaded import ensure_graph_cache

    ensure_graph_cache(db)  # what `dgrag snapshot` does: replicas then build and write nothing
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    folders = [work / f"replica{i}" for i in range(replicas)]
    procs: list[subprocess.Popen] = []
    try:
        urls = []
        for i, folder in enumerate(folders):
            proc, url = start_replica(read_only_copy(db, folder), core=cores[i % len(cores)] if cores else None)
            procs.append(proc)
            urls.append(url)
        one = _throughput(urls[:1], queries, clients_per_replica)
        many = _throughput(urls, queries, clients_per_replica * replicas)
    finally:
        try:
            _stop(procs)
        finally:
            for folder in folders:
                if folder.exists():
                    _writable(folder)
    return {"replicas": replicas, "queries": len(queries), "qps_1_replica": round(one, 1),
            f"qps_{replicas}_replicas": round(many, 1), "speedup": round(many / one, 2),
            "cores": len(cores) or os.cpu_count()}
