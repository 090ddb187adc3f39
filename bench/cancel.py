"""How long `dgrag chat` takes to give the prompt back after Ctrl-C, at each point of an answer.

    python -m bench.cancel [--rounds 10] [--json]

One `dgrag chat` process on a pseudo-terminal, over the fixture excerpt (indexed once into a
temporary folder), answering through the loopback OpenAI server (tests/openai_server.py). For
each point, `--rounds` times: a question is typed, the bench waits until the answer is at that
point, types Ctrl-C and times until `[cancelled]` and the prompt are written. The points:

* rewrite   -- the first request of a follow-up's answer (the rewrite) held: the model silent;
* silent    -- the answer's request held before its first byte;
* streaming -- the first words of the answer shown, the rest held;
* tool      -- the agent's tool round (which search next) held;
* back-off  -- the model answered 429 (Retry-After 600, capped at 30 s): the client waits to retry;
* prompt    -- no answer: a line typed at the prompt and Ctrl-C in one write (a paste, or keys
               a busy machine delivers together); the line is cleared and the prompt given
               back. `lost` counts the times nothing came within 5 s (the bench then types
               Enter to get the prompt back).

Held requests are released only at the end, so every figure is measured while the model still
has not answered. The load average at the start and at the end is printed with the figures.
"""
from __future__ import annotations

import argparse
import json
import os
import pty
import re
import select
import shutil
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the loopback OpenAI server lives with the tests

POINTS = ("rewrite", "silent", "streaming", "tool", "back-off", "prompt")
LOST_S = 5.0  # no prompt this long after Ctrl-C at the prompt: lost
PROMPT = b"dgrag> "


def _responder(request: dict):
    messages = request["messages"]
    last = str(messages[-1].get("content"))
    if "Follow-up question:" in last:
        asked = re.search(r"Follow-up question: (.*)", last).group(1).strip()
        return {"content": asked, "fault": "hold"} if asked.startswith("rewrite") else asked
    if request.get("tools"):
        if any(m.get("role") == "tool" for m in messages):
            return "I have what I need."
        asked = last.removeprefix("Question: ").strip()
        call = {"tool_calls": [{"name": "retrieve", "arguments": {"query": asked}}]}
        return {**call, "fault": "hold"} if asked.startswith("tool") else call
    asked = last.rsplit("Question: ", 1)[-1].strip()
    if asked.startswith("silent"):
        return {"content": "never shown", "fault": "hold"}
    if asked.startswith("streaming"):
        return {"content": "The first words, then never shown", "fault": "hold_stream"}
    if asked.startswith("back-off"):
        return {"http_status": 429, "headers": {"Retry-After": "600"}}
    return "Run `ace run` in the project folder [1]."


class Chat:
    """`python -m dgrag chat` on a pseudo-terminal."""

    def __init__(self, args: list[str], env: dict):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            try:
                os.chdir(ROOT)
                os.execve(sys.executable, [sys.executable, "-m", "dgrag", "chat", *args], env)
            finally:
                os._exit(127)
        self.seen = b""

    def expect(self, text: bytes, timeout: float = 300) -> bytes:
        deadline = time.monotonic() + timeout
        while text not in self.seen:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{text!r} not written within {timeout} s: {self.seen[-2000:]!r}")
            if select.select([self.fd], [], [], 0.01)[0]:
                self.seen += os.read(self.fd, 65536)
        end = self.seen.index(text) + len(text)
        out, self.seen = self.seen[:end], self.seen[end:]
        return out

    def type(self, text: str) -> None:
        os.write(self.fd, text.encode())

    def close(self, timeout: float = 30) -> None:
        """Wait for the chat to exit (killed after `timeout` s)."""
        deadline = time.monotonic() + timeout
        exited = False
        while not exited and time.monotonic() < deadline:
            if select.select([self.fd], [], [], 0.05)[0]:
                try:
                    os.read(self.fd, 65536)  # keep the terminal drained
                except OSError:
                    pass
            exited = bool(os.waitpid(self.pid, os.WNOHANG)[0])
        if not exited:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        os.close(self.fd)


def _index(work: Path) -> Path:
    from dgrag.backends.embedder_choice import make_embedder
    from dgrag.config import Settings
    from dgrag.ingest.pipeline import index_folder
    from dgrag.store import Store

    shutil.copytree(ROOT / "tests" / "fixtures" / "docs", work / "docs")
    s = Settings(db_path=work / "index.db", docs_root=work / "docs",
                 url_template="https://github.com/arkui-x/docs/blob/master/{path}#L{line}")
    with Store(s.db_path) as st:
        index_folder(s, st, make_embedder(Settings()))
    return s.db_path


def _wait(server, point: str, n: int, held_before: int) -> None:
    """Until the answer of question `point n` is at its point."""
    if point == "back-off":
        needle = f"{point} {n}"
        while not any(needle in json.dumps(r["json"]) and r["json"].get("stream") for r in server.chat_requests()):
            time.sleep(0.005)
    else:
        server.wait_held(held_before + 1)


def _at_prompt(chat: Chat, n: int, times: dict, lost: dict) -> None:
    """A line and Ctrl-C in one write at the prompt: the time to the next prompt, or lost."""
    t0 = time.perf_counter()
    chat.type(f"prompt {n}\x03")
    try:
        out = chat.expect(PROMPT, timeout=LOST_S)
    except RuntimeError:
        lost["prompt"] += 1
        chat.type("\n")
        chat.expect(PROMPT, timeout=120)
        return
    times["prompt"].append(time.perf_counter() - t0)
    if b"^C" not in out:
        raise RuntimeError(f"prompt: no ^C in {out!r}")


def run(rounds: int) -> dict:
    from openai_server import start_server

    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        db = _index(Path(tmp))
        server = start_server(_responder, stream_chunk_chars=15)
        env = {k: v for k, v in os.environ.items() if not k.startswith("DGRAG_")}
        env.update(DGRAG_LLM_BASE_URL=server.base_url, DGRAG_LLM_MODEL="chat", DGRAG_LLM_TIMEOUT_S="600",
                   DGRAG_LLM_MAX_RETRIES="1", TERM="dumb", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
        chat = Chat(["--db", str(db), "--config", json.dumps({"final_chunk_k": 2, "final_code_k": 0,
                                                                "final_table_k": 0, "final_image_k": 0})], env)
        times: dict[str, list[float]] = {p: [] for p in POINTS}
        lost = {p: 0 for p in POINTS}
        try:
            chat.expect(PROMPT)
            chat.type("How do I create an app with ACE Tools?\n")  # a history, so each answer starts by a rewrite
            chat.expect(PROMPT)
            for n in range(rounds):
                for point in POINTS:
                    if point == "prompt":
                        _at_prompt(chat, n, times, lost)
                        continue
                    held = server.held
                    chat.type(f"{point} {n}\n")
                    _wait(server, point, n, held)
                    if point == "streaming":
                        chat.expect(b"The first words")
                    t0 = time.perf_counter()
                    chat.type("\x03")
                    out = chat.expect(PROMPT, timeout=120)
                    times[point].append(time.perf_counter() - t0)
                    if b"[cancelled]" not in out:
                        raise RuntimeError(f"{point}: no [cancelled] in {out!r}")
        finally:
            server.release()  # the cancelled answers' requests end; their workers drop them and exit
            deadline = time.monotonic() + 60
            while server.held and time.monotonic() < deadline:
                time.sleep(0.05)
            chat.type("/exit\n")
            chat.close()
            server.stop()
    rows = {p: {"n": len(v) + lost[p], "lost": lost[p], "p50_ms": round(statistics.median(v) * 1000, 1) if v else None,
                "max_ms": round(max(v) * 1000, 1) if v else None} for p, v in times.items()}
    return {"points": rows, "load_average": {"start": [round(x, 1) for x in load0],
                                             "end": [round(x, 1) for x in os.getloadavg()]},
            "cpus": os.cpu_count()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    out = run(args.rounds)
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(f"{'point':<10} {'n':>3} {'lost':>4} {'p50 ms':>8} {'max ms':>8}")
    for point, row in out["points"].items():
        print(f"{point:<10} {row['n']:>3} {row['lost']:>4} {row['p50_ms']!s:>8} {row['max_ms']!s:>8}")
    print(f"load average (1, 5, 15 min) at start {out['load_average']['start']}, at end "
          f"{out['load_average']['end']}, on {out['cpus']} CPUs")


if __name__ == "__main__":
    main()
