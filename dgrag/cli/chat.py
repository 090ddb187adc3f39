"""`dgrag chat`: questions in a loop over one loaded index, as the seed's `server_text.py -i`.

Reads stdin line by line, from a terminal (a prompt, line editing and history through readline)
or from a pipe (each question echoed after the prompt, so the output reads as a transcript).
The conversation is kept, so a follow-up is rewritten into a standalone question when an LLM is
configured (the answer layer's rewrite step). Every answer ends with its numbered references as
links, or, where it has none, its sources one per line: breadcrumb and source URL (no node id).
/exit or end of input quits; Ctrl-C cancels the answer being written and returns to the prompt.
"""
from __future__ import annotations

import contextlib
import os
import re
import signal
import sys
import threading
from typing import Iterable, Iterator, TextIO

from ..errors import DgragError
from .common import require_index, retrieval_overrides, settings_for

PROMPT = "dgrag> "
HELP = ("Type a question; a follow-up may refer to earlier answers.\n"
        "  /reset  forget the conversation\n"
        "  /exit   quit (also /quit, Ctrl-D)\n"
        "  Ctrl-C  cancel the answer being written")
_KINDS = ("chunks", "codes", "tables", "images")


def cmd_chat(args) -> int:
    from ..answer import Answerer
    from ..retrieve.retriever import Retriever

    settings = settings_for(args)
    require_index(settings.db_path)
    _note(f"loading {settings.db_path} ...")
    retriever = Retriever(settings)
    loaded = retriever.handle.get()  # load now, not at the first question
    answerer = Answerer(settings, retriever, llm=None if args.no_llm else "auto")
    if getattr(answerer, "llm", None) is not None:
        mode = f"answers by {settings.chat_model or settings.llm_model}"
    elif args.no_llm:
        mode = "retrieval only (--no-llm): the extractive answer, cited"
    else:
        mode = "no LLM configured (DGRAG_LLM_BASE_URL, DGRAG_LLM_MODEL): the extractive answer, cited"
    _note(f"{loaded.n_nodes} nodes; {mode}. /help for commands, /exit or Ctrl-D to quit.")
    if sys.stdin.isatty():
        catch_ctrl_c()
    session = ChatSession(answerer, retrieval_overrides(args), sys.stdout)
    return session.run(read_questions(sys.stdin))


def catch_ctrl_c() -> None:
    """Make Ctrl-C raise KeyboardInterrupt even when this process started with SIGINT ignored.
    A background job of a non-interactive shell (`cmd &` in a script, a CI step), nohup and some
    supervisors start their children so, and Python leaves an ignored SIGINT ignored: Ctrl-C at
    the chat's terminal would then do nothing at all. A handler someone set on purpose stays."""
    if (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is signal.SIG_IGN):
        signal.signal(signal.SIGINT, signal.default_int_handler)


def read_questions(stream: TextIO) -> Iterator[str]:
    """Lines of input. On a terminal: a prompt through input() (readline: editing, history),
    Ctrl-C clears the line. From a pipe: each line echoed after the prompt."""
    if stream.isatty() and stream is sys.stdin:
        ctrl_c_is_a_key = _bind_ctrl_c()
        while True:
            try:
                with _no_interrupt_char(stream) if ctrl_c_is_a_key else contextlib.nullcontext():
                    line = input(PROMPT)
            except EOFError:
                print()
                return
            except KeyboardInterrupt:  # a SIGINT from elsewhere, or readline without the key
                print("^C")
                continue
            if CTRL_C in line:  # typed at the prompt: readline has shown it as ^C
                _forget_last_line(line)
                continue
            yield line
        return
    for line in stream:
        line = line.rstrip("\r\n")
        print(PROMPT + line, flush=True)
        yield line


# At the prompt Ctrl-C is a key that readline reads, not a signal. readline drops a SIGINT that
# comes while it handles typed keys (Python checks its signals only when readline's own wait
# is interrupted), and the terminal then shows nothing until the next key: with keys and
# Ctrl-C arriving together, 10 times in 40 (`bench.cancel`, the prompt point). So while
# input() reads, the terminal's interrupt character is off and Ctrl-C is bound to "insert a
# literal ^C, accept the line".
CTRL_C = "\x03"


def _bind_ctrl_c() -> bool:
    """Bind Ctrl-C for the prompt; False where readline is missing or is libedit (whose
    bindings are written otherwise: there the prompt keeps the signal)."""
    try:
        import readline
    except ImportError:  # pragma: no cover - Windows
        return False
    if "libedit" in (readline.__doc__ or ""):  # pragma: no cover - macOS's Python
        return False
    readline.parse_and_bind(r'"\C-c": "\C-v\C-c\C-m"')
    return True


@contextlib.contextmanager
def _no_interrupt_char(stream: TextIO):
    """The terminal's interrupt character off for the block, as it was after it."""
    import termios

    fd = stream.fileno()
    try:
        before = termios.tcgetattr(fd)
    except termios.error:
        yield
        return
    during = termios.tcgetattr(fd)
    during[6][termios.VINTR] = bytes([os.fpathconf(fd, "PC_VDISABLE") & 0xFF])
    termios.tcsetattr(fd, termios.TCSANOW, during)
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSANOW, before)


def _forget_last_line(line: str) -> None:
    """Keep a line cleared by Ctrl-C out of the history that the up arrow walks."""
    import readline

    n = readline.get_current_history_length()
    if n and readline.get_history_item(n) == line:
        readline.remove_history_item(n - 1)


class ChatSession:
    """One conversation: its history, its retrieval settings, where it writes."""

    def __init__(self, answerer, overrides: dict | None = None, out: TextIO | None = None):
        self.answerer = answerer
        self.overrides = overrides or None
        self.out = out or sys.stdout
        self.history: list[dict] = []

    def run(self, lines: Iterable[str]) -> int:
        for line in lines:
            text = line.strip()
            if not text:
                continue
            if text.startswith("/"):
                if not self.command(text):
                    break
                continue
            try:
                self.ask(text)
            except DgragError as exc:
                print(f"dgrag: error: {exc}", file=sys.stderr, flush=True)
        return 0

    def command(self, text: str) -> bool:
        """A slash command; False means quit."""
        name = text.split()[0].lower()
        if name in ("/exit", "/quit"):
            return False
        if name == "/reset":
            self.history.clear()
            self._write("(conversation forgotten)\n")
        elif name == "/help":
            self._write(HELP + "\n")
        else:
            self._write(f"unknown command {name}; /help lists them\n")
        return True

    def ask(self, question: str) -> str | None:
        """Answer one question, streaming it; the turn joins the history unless cancelled.
        The answer is written in a thread of its own (`Running`): this thread only waits for
        its events, so Ctrl-C cancels it at once, whatever the model is doing."""
        from ..answer.running import Running

        history = list(self.history)
        turn = {"asked": question, "results": [], "parts": [], "answer": None, "meta": {}}
        running = None
        try:
            running = Running(lambda cancel: self.answerer.chat(question, history, self.overrides, cancel=cancel))
            for ev in running:
                self._on_event(ev, turn)
        except KeyboardInterrupt:
            self._write("\n[cancelled]\n")
            return None
        finally:
            if running is not None:
                running.cancel()  # a no-op once the answer ended; else it stops it
        answer = "".join(turn["parts"]) if turn["answer"] is None else turn["answer"]
        # the agent's answer ends with its cited references as links already; else list the sources
        sources = [] if turn["meta"].get("references") else source_lines(turn["results"], answer)
        self._write("\n" + "".join(line + "\n" for line in sources))
        self.history += [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]
        return answer

    def _on_event(self, ev: dict, turn: dict) -> None:
        kind = ev.get("type")
        if kind == "rewrite":
            turn["asked"] = ev["query"]
            self._write(f"(follow-up read as: {ev['query']})\n")
        elif kind == "retrieval":
            turn["results"].append(ev["result"].to_api())
            if ev.get("query") and ev["query"] != turn["asked"] and getattr(self.answerer, "llm", None) is not None:
                self._write(f"(searching: {ev['query']})\n")
        elif kind == "text":
            turn["parts"].append(ev["text"])
            self._write(ev["text"])
        elif kind == "done":
            turn["answer"], turn["meta"] = ev.get("answer"), ev.get("meta") or {}

    def _write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()


def source_lines(results: list[dict], answer: str) -> list[str]:
    """The sources of an answer as links, one per line: those it cites, else all retrieved."""
    items, seen = [], set()
    for result in results:
        for kind in _KINDS:
            for item in result.get(kind) or []:
                if item.get("id") and item["id"] not in seen:
                    seen.add(item["id"])
                    items.append(item)
    if not items:
        return []
    cited = [it for it in items if re.search(rf"(?<![\w-]){re.escape(it['id'])}(?![\w-])", answer or "")]
    lines = ["Sources:"]
    for it in cited or items:
        where = it.get("source_url") or it.get("source_path") or ""
        lines.append(f"  - {it.get('breadcrumb') or '-'}  {where}".rstrip())  # no node id: a person reads it
    return lines


def _note(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
