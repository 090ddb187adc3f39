"""The command line as a person uses it: one parser with every command, each flag's help naming
its DGRAG_* variable, flags falling back to those variables, one-line errors with exit 2 (as
separate processes, so a traceback would show), and `dgrag chat` driven from a pipe and from a
pseudo-terminal: two questions, the second a follow-up rewritten with the history by a loopback
chat model, and Ctrl-C cancelling an answer at each point of it (the model silent, streaming, in a
tool round, the client in a retry's back-off) without leaving the chat."""
from __future__ import annotations

import argparse
import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from dataclasses import fields
from importlib import metadata
from pathlib import Path

import pytest

import dgrag
from dgrag.cli import build_parser, main
from dgrag.cli.common import retrieval_overrides, settings_for
from dgrag.config import RetrievalConfig, Settings

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = {"index", "sync", "watch", "stats", "snapshot", "enrich", "import-passages", "import-openie", "query",
            "eval", "chat", "serve"}
SOURCE_LINE = re.compile(r"https://github\.com/arkui-x/docs/blob/master/\S+\.md#L\d+")
SMALL = json.dumps({"final_chunk_k": 2, "final_code_k": 0, "final_table_k": 0, "final_image_k": 0})


def _subcommands(parser: argparse.ArgumentParser) -> dict:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _env_var_of(dest: str) -> str | None:
    """The variable an argument stands for, by naming convention (--db -> db_path, --port ->
    server_port, DOCS (docs_dir) -> docs_root, --method -> the retrieval parameter)."""
    settings = {f.name for f in fields(Settings)} - {"retrieval"}
    for name in (dest, f"{dest}_path", f"server_{dest}", dest.replace("_dir", "_root")):
        if name in settings:
            return "DGRAG_" + name.upper()
    if dest in {f.name for f in fields(RetrievalConfig)}:
        return "DGRAG_RETRIEVAL_" + dest.upper()
    return None


def _clean_env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DGRAG_") and k != "OPENAI_API_KEY"}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", GRADIO_ANALYTICS_ENABLED="False", **extra)
    return env


# ---- the parser -----------------------------------------------------------------------------
def test_the_one_parser_has_every_command():
    assert set(_subcommands(build_parser())) == COMMANDS


def test_every_option_has_help_and_names_its_environment_variable():
    parser = build_parser()
    named = []
    for command, sub in [("dgrag", parser), *_subcommands(parser).items()]:
        for action in sub._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            assert action.help and action.help != argparse.SUPPRESS, f"{command} {action.dest} has no help"
            var = _env_var_of(action.dest)
            if var:
                assert var in action.help, f"{command} {action.option_strings or action.dest}: help lacks {var}"
                named.append((command, action.dest))
    assert ("query", "db") in named and ("serve", "port") in named and ("index", "docs_dir") in named
    assert {c for c, d in named if d == "db"} == COMMANDS  # every command takes --db


def test_version_comes_from_the_package_metadata(capsys):
    try:
        expected = metadata.version("dgrag")
    except metadata.PackageNotFoundError:
        expected = dgrag.__version__
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"dgrag {expected}"


def test_flags_fall_back_to_their_environment_variables(monkeypatch, fixture_index, capsys):
    monkeypatch.setenv("DGRAG_DB_PATH", str(fixture_index[0].db_path))
    assert main(["stats", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["nodes"]["file"] == 11
    monkeypatch.setenv("DGRAG_DB_PATH", "/nonexistent/x.db")  # the flag beats the variable
    assert main(["stats", "--json", "--db", str(fixture_index[0].db_path)]) == 0
    capsys.readouterr()

    monkeypatch.setenv("DGRAG_SERVER_PORT", "8123")
    monkeypatch.setenv("GRADIO_SERVER_NAME", "0.0.0.0")  # what Spaces sets
    parser = build_parser()
    s = settings_for(parser.parse_args(["serve"]))
    assert (s.server_host, s.server_port, s.db_path) == ("0.0.0.0", 8123, Path("/nonexistent/x.db"))
    assert settings_for(parser.parse_args(["serve", "--port", "9000"])).server_port == 9000
    # --method only when given, so DGRAG_RETRIEVAL_METHOD is not overridden by a default
    assert retrieval_overrides(parser.parse_args(["query", "q"])) == {}
    args = parser.parse_args(["query", "q", "--method", "ppr", "--config", '{"final_chunk_k": 3}'])
    assert retrieval_overrides(args) == {"final_chunk_k": 3, "method": "ppr"}


def _options(sub: argparse.ArgumentParser) -> dict[str, tuple]:
    return {a.dest: (tuple(a.option_strings), a.type, a.choices, a.help) for a in sub._actions}


def test_the_commands_that_answer_questions_take_the_same_retrieval_options():
    """query and chat share one block of options, and eval its --config (they were written
    twice, with two helps for --config)."""
    subs = _subcommands(build_parser())
    query, chat, ev = (_options(subs[c]) for c in ("query", "chat", "eval"))
    shared = ("db", "embedder", "method", "config", "no_llm")
    assert {d: query[d] for d in shared} == {d: chat[d] for d in shared}
    assert ev["config"] == query["config"]
    for argv in (["query", "q"], ["chat"], ["eval", "q.jsonl"]):
        args = build_parser().parse_args([*argv, "--config", '{"final_chunk_k": 3}'])
        assert args.config == {"final_chunk_k": 3}


def test_serve_and_the_app_refuse_an_absent_index_alike(tmp_path, capsys):
    """One check, one message, whether `dgrag serve` or server.serve (python app.py) meets it."""
    from types import SimpleNamespace

    from dgrag.errors import DgragError
    from dgrag.web.server import App, serve

    missing = tmp_path / "missing.db"
    assert main(["serve", "--db", str(missing)]) == 2
    app = App(SimpleNamespace(settings=Settings(db_path=missing)), None, None)
    with pytest.raises(DgragError) as direct:
        serve(app, build_demo_index=False)
    assert str(direct.value) in capsys.readouterr().err and "--build-demo" in str(direct.value)
    assert not missing.exists()


# ---- errors: one line on stderr, exit 2, in a real process ------------------------------------
def _bad_cases(tmp: Path, db: Path) -> list[tuple[list[str], dict, str]]:
    garbage = tmp / "garbage.db"
    garbage.write_bytes(b"this is not a database" * 100)
    missing = tmp / "missing.db"
    return [
        (["query", "q", "--db", str(db), "--config", "{bad json"], {}, "not valid JSON"),
        (["query", "q", "--db", str(db), "--config", "[1, 2]"], {}, "JSON object"),
        (["query", "q", "--db", str(db), "--config", '{"final_chunk_k": "many"}'], {}, "final_chunk_k"),
        (["eval", "q.jsonl", "--db", str(db), "--k", "1,x"], {}, "--k"),
        (["eval", "q.jsonl", "--db", str(db), "--methods", "dense,bm42"], {}, "--methods"),
        (["eval", str(tmp / "no-questions.jsonl"), "--db", str(db)], {}, "no questions file"),
        (["query", "q", "--db", str(missing)], {}, "no index file"),
        (["chat", "--db", str(missing)], {}, "no index file"),
        (["stats"], {"DGRAG_DB_PATH": str(missing)}, str(missing)),
        (["stats", "--db", str(garbage)], {}, "garbage.db"),
        (["stats", "--db", str(db)], {"DGRAG_MAX_WORKERS": "lots"}, "max_workers"),
        (["index", "--db", str(tmp / "new.db")], {}, "DGRAG_DOCS_ROOT"),
        (["import-passages", str(tmp / "none.json"), "--db", str(tmp / "new.db")], {}, "none.json"),
        (["serve", "--db", str(missing)], {}, "no index file"),
        (["serve", "--port", "99999"], {}, "--port"),
        (["query"], {}, "question"),
    ]


def test_bad_input_is_one_line_and_exit_2(tmp_path, fixture_index):
    cases = _bad_cases(tmp_path, fixture_index[0].db_path)
    for argv, env, needle in cases:
        proc = subprocess.run([sys.executable, "-m", "dgrag", *argv], env=_clean_env(**env), cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2, (argv, proc.returncode, proc.stderr)
        assert len(lines) == 1 and "Traceback" not in proc.stderr, (argv, proc.stderr)
        assert needle in lines[0] and "error" in lines[0], (argv, lines[0])
        assert proc.stdout == "", (argv, proc.stdout)
    assert not (tmp_path / "new.db").exists()  # a refused command creates no index file


# ---- dgrag chat from a pipe, without an LLM -------------------------------------------------------
def test_chat_from_a_pipe_answers_each_line_with_its_sources(fixture_index):
    questions = "How do I create an application with ACE Tools?\n\n/help\nAnd how do I run it on Android?\n"
    proc = subprocess.run([sys.executable, "-m", "dgrag", "chat", "--db", str(fixture_index[0].db_path), "--no-llm",
                           "--config", SMALL], input=questions, env=_clean_env(), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    out = proc.stdout
    assert "dgrag> How do I create an application with ACE Tools?" in out
    assert "dgrag> And how do I run it on Android?" in out and "/exit" in out  # /help's text
    turns = out.split("dgrag> ")[1:]
    answers = [t for t in turns if not t.startswith(("/help", "\n"))]
    assert len(answers) == 2
    for answer in answers:
        assert "**Read more**" in answer and "chunk-" not in answer  # the cited sentences are the answer
        # the numbered references are the sources: each a section's link, no "Sources:" list twice
        sources = [ln for ln in answer.split("**Read more**")[1].splitlines() if ln.strip()]
        assert 1 <= len(sources) <= 2 and "Sources:" not in answer, sources
        assert all(SOURCE_LINE.search(s) and re.match(r"\[\d\] \[", s) for s in sources), sources


# ---- dgrag chat in a terminal, with a chat model ----------------------------------------------------
FIRST = "How do I create an app with ACE Tools?"
FOLLOW_UP = "And how do I run it?"
REWRITTEN = "How do I run an application created with ACE Tools?"


CANCELLED_AT = {  # a question -> what the chat model does with it: each point where Ctrl-C comes
    "silent question": {"content": "never shown", "fault": "hold"},  # not a byte until released
    "streaming question": {"content": "The first words, then never shown", "fault": "hold_stream"},
    "back-off question": {"http_status": 429, "headers": {"Retry-After": "600"}},  # a retry in 30 s
}


def _chat_model(request: dict):
    messages = request["messages"]
    last = str(messages[-1].get("content"))
    if "Follow-up question:" in last:  # the rewrite step
        follow_up = re.search(r"Follow-up question: (.*)", last).group(1).strip()
        return REWRITTEN if follow_up == FOLLOW_UP else follow_up
    if request.get("tools"):  # search once with the question, then answer
        if any(m.get("role") == "tool" for m in messages):
            return "I have what I need."
        question = last.removeprefix("Question: ").strip()
        call = {"tool_calls": [{"name": "retrieve", "arguments": {"query": question}}]}
        return {**call, "fault": "hold"} if question == "tool round question" else call
    asked = last.rsplit("Question: ", 1)[-1].strip()
    return CANCELLED_AT.get(asked, "Run `ace run` in the project folder [1].")


class Terminal:
    """`python -m dgrag ARGS` on a pseudo-terminal: what it writes, what is typed at it.
    `sigint`: the SIGINT disposition the child starts with (exec keeps an ignored signal
    ignored). None: this process's, which depends on how the tests were started -- a
    background job of a non-interactive shell ignores SIGINT, an interactive shell does not."""

    def __init__(self, args: list[str], env: dict, sigint=None):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: nothing but exec
            try:
                if sigint is not None:
                    signal.signal(signal.SIGINT, sigint)
                os.chdir(ROOT)
                os.execve(sys.executable, [sys.executable, "-m", "dgrag", *args], env)
            finally:
                os._exit(127)
        self.seen = b""

    def expect(self, text: str, timeout: float = 120) -> str:
        """Everything written up to and including `text` (carriage returns dropped)."""
        want, deadline = text.encode(), time.monotonic() + timeout
        while want not in self.seen:
            left = deadline - time.monotonic()
            assert left > 0, f"{text!r} not written within {timeout} s; so far:\n{self.seen.decode(errors='replace')}"
            if select.select([self.fd], [], [], min(left, 1.0))[0]:
                try:
                    chunk = os.read(self.fd, 65536)
                except OSError:
                    chunk = b""
                assert chunk, f"the chat ended before {text!r}:\n{self.seen.decode(errors='replace')}"
                self.seen += chunk
        end = self.seen.index(want) + len(want)
        out, self.seen = self.seen[:end], self.seen[end:]
        return out.decode(errors="replace").replace("\r", "")

    def type(self, text: str) -> None:
        os.write(self.fd, text.encode())

    def exit_code(self, timeout: float = 30) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            select.select([self.fd], [], [], 0.2)
            try:
                self.seen += os.read(self.fd, 65536)  # keep the terminal drained, and what it showed
            except OSError:
                pass
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.pid = 0
                return os.waitstatus_to_exitcode(status)
        raise AssertionError("the chat did not exit")

    def close(self) -> None:
        if self.pid:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        os.close(self.fd)


def _wait_for_request(server, needle: str, timeout: float = 120) -> None:
    """Until the chat model has been asked for the answer to `needle` (its streamed request)."""
    deadline = time.monotonic() + timeout
    while not any(needle in json.dumps(r["json"]) and r["json"].get("stream") for r in server.chat_requests()):
        assert time.monotonic() < deadline, f"the chat model never got {needle!r}"
        time.sleep(0.05)


def _ctrl_c_cancels(term: Terminal, server, held: int | None) -> None:
    """Ctrl-C now: `[cancelled]` and the prompt, while the model still holds `held` requests
    (each hold lasts until the test releases it, so only a real hang fails this; a held stream
    is shut down by the cancel: None, not counted here)."""
    term.type("\x03")
    cancelled = term.expect("dgrag> ", timeout=120)
    assert "[cancelled]" in cancelled and "Traceback" not in cancelled and "never shown" not in cancelled, cancelled
    assert "LLM error" not in cancelled and (held is None or server.held == held)


def test_chat_in_a_terminal_rewrites_the_follow_up_and_ctrl_c_cancels_an_answer(fixture_index,
                                                                                 openai_server_factory):
    server = openai_server_factory(_chat_model, stream_chunk_chars=15)
    env = _clean_env(DGRAG_LLM_BASE_URL=server.url + "/v1", DGRAG_LLM_MODEL="chat", DGRAG_LLM_TIMEOUT_S="600",
                     DGRAG_LLM_MAX_RETRIES="1", DGRAG_LLM_BACKOFF_S="0.01", TERM="dumb")
    # started with SIGINT ignored, as from `bash scripts/test.sh &` or a CI runner: before, Ctrl-C
    # then did nothing, and this test failed or passed with the way the suite was started
    term = Terminal(["chat", "--db", str(fixture_index[0].db_path), "--config", SMALL], env, sigint=signal.SIG_IGN)
    try:
        assert "answers by chat" in term.expect("dgrag> ", timeout=240)
        term.type(FIRST + "\n")
        first = term.expect("dgrag> ")
        assert "ace run" in first and SOURCE_LINE.search(first) and "follow-up read as" not in first

        term.type(FOLLOW_UP + "\n")
        second = term.expect("dgrag> ")
        assert f"(follow-up read as: {REWRITTEN})" in second and "ace run" in second and SOURCE_LINE.search(second)
        rewrites = [r["json"]["messages"][-1]["content"] for r in server.chat_requests()
                    if "Follow-up question:" in str(r["json"]["messages"][-1]["content"])]
        assert len(rewrites) == 1 and FIRST in rewrites[0] and FOLLOW_UP in rewrites[0]  # the history was sent
        assert any(REWRITTEN in json.dumps(r["json"]) for r in server.chat_requests() if r["json"].get("tools"))

        # Ctrl-C at each point of an answer; every hold lasts until the end of the test
        term.type("silent question\n")  # the model has the request and says nothing
        server.wait_held(1)
        _ctrl_c_cancels(term, server, held=1)
        term.type("streaming question\n")  # the first words are out, the rest held
        term.expect("The first words")
        _ctrl_c_cancels(term, server, held=None)
        # a stream the model holds is shut down by the cancel: the model's server sees it closed
        assert server.wait_closed(1, 120) and server.closed_held == 1
        term.type("tool round question\n")  # the model decides what to search, silently
        server.wait_held(2)
        _ctrl_c_cancels(term, server, held=2)
        term.type("back-off question\n")  # a 429: the client waits 30 s to retry
        _wait_for_request(server, "back-off question")
        _ctrl_c_cancels(term, server, held=2)
        # at the prompt Ctrl-C is a key: the line is shown ending in ^C, then a new prompt.
        # Typed with the keys before it in one write, as a paste or a busy machine delivers
        # them: as a signal it was sometimes lost while readline echoed the keys (no prompt)
        term.type("half a line\x03")
        assert "half a line^C\ndgrag> " in term.expect("dgrag> ", timeout=30)
        term.type("\x1b[A")  # the up arrow: the last line asked, not the cleared one
        term.expect("back-off question", timeout=30)
        term.type("\x03")
        assert term.expect("dgrag> ", timeout=30).endswith("^C\ndgrag> ")

        term.type("And on Android?\n")  # the cancelled turn is not in the history
        term.expect("dgrag> ")
        last_rewrite = [str(r["json"]["messages"][-1]["content"]) for r in server.chat_requests()
                        if "Follow-up question:" in str(r["json"]["messages"][-1]["content"])][-1]
        assert "And on Android?" in last_rewrite and FIRST in last_rewrite
        assert not any(q in last_rewrite for q in (*CANCELLED_AT, "tool round question"))

        server.release()  # the cancelled answers' requests end now: nothing of them is shown
        term.type("/exit\n")
        assert term.exit_code() == 0
        assert all(text not in term.seen.decode(errors="replace")
                   for text in ("never shown", "Traceback", "LLM error", "dgrag: error"))
    finally:
        term.close()
