"""The `dgrag` command line. Thin: parse arguments (parser.py builds every command), call the
library, print. Errors are one line on stderr: a typed DgragError, a file the system refuses or an
argument argparse rejects exits 2; anything unexpected exits 1 (`dgrag --traceback ...` shows
where). Layout: common.py (settings, argument types, output), build.py (index, stats, snapshot,
enrich, imports), fresh.py (sync, watch), ask.py (query, eval), chat.py, serve.py; nothing here imports parser.py but
this module."""
from __future__ import annotations

import os
import sqlite3
import sys

from ..errors import DgragError
from .parser import build_parser

__all__ = ["main", "build_parser"]


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a bad argument (already one line on stderr)
        return exc.code if isinstance(exc.code, int) else 2
    try:
        return int(args.func(args) or 0)
    except DgragError as exc:
        return _fail(str(exc), 2)
    except KeyboardInterrupt:
        return _fail("interrupted; run the same command again to resume", 130)
    except BrokenPipeError:  # `dgrag query ... | head`: the reader left; say nothing more
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except (OSError, sqlite3.Error) as exc:  # a file that cannot be read or written, a refused database
        return _fail(f"{exc.__class__.__name__}: {exc}" if isinstance(exc, sqlite3.Error) else str(exc), 2)
    except Exception as exc:  # a bug: one line unless asked for the traceback
        if args.traceback:
            raise
        return _fail(f"unexpected {exc.__class__.__name__}: {exc} (run `dgrag --traceback {args.command} ...` "
                     "to see where)", 1)


def _fail(message: str, code: int) -> int:
    print("dgrag: error: " + " ".join(message.split()), file=sys.stderr, flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
