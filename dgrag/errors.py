"""Typed errors of the library. The CLI and the UI turn them into messages."""


class DgragError(Exception):
    """Base class of every error dgrag raises on purpose."""


class ConfigError(DgragError):
    """A setting has an invalid value."""


class PackError(ConfigError):
    """An offline-OpenIE pack is unknown, or its file is malformed (dgrag/enrich/packs/README.md)."""


class SqliteVecUnavailable(DgragError):
    """No sqlite3 module on this Python can load the sqlite-vec extension."""


class IndexFileError(DgragError):
    """The index file cannot be used: corrupt, foreign, or not an index at all."""


class SchemaTooNew(IndexFileError):
    """The file was written by a newer dgrag than this one."""


class EmbeddingMismatch(IndexFileError):
    """The file was built with another embedding model or dimension."""


class ParseError(DgragError):
    """One document could not be parsed; the run reports it and goes on."""


class BackendError(DgragError):
    """An embedding, rerank or LLM backend failed or is not installed."""


class LLMError(BackendError):
    """An LLM call failed after its retries (or returned unusable output)."""


class AccessDenied(DgragError):
    """The operation needs the admin secret, or touches a path outside its root."""


class QueryRejected(ConfigError):
    """A request asks for more than one request may: a query too long, too many parameters."""


class RequestTooLarge(DgragError):
    """A request body is larger than the server accepts."""


class DeadlineExceeded(DgragError):
    """A request ran past its time budget (or waited too long for a busy resource)."""


class IndexNotReady(DgragError):
    """The index is being built and has no page ready yet (the first start's first batch)."""


class UnknownAnswer(DgragError):
    """Feedback names an answer id that no log holds (never given, pruned, or forgotten)."""


class LogUnavailable(DgragError):
    """The question log cannot be written (no writable file for it) or did not answer in time."""


class Cancelled(DgragError):
    """The caller cancelled the work (Ctrl-C in `dgrag chat`, Stop in the app) before it ended.
    Not an LLMError: a cancelled call is not retried, nor answered from the offline path."""

    @staticmethod
    def check(cancel) -> None:
        """Raise when `cancel` (a threading.Event, or None for "cannot be cancelled") is set."""
        if cancel is not None and cancel.is_set():
            raise Cancelled("cancelled")


class SyncError(DgragError):
    """A docs repository could not be synced: a git command failed or ran past its time."""


class GitMissing(SyncError):
    """No `git` program on this machine's PATH."""


class NotARepository(SyncError):
    """The path or URL given is not a git repository."""


class BranchMissing(SyncError):
    """The repository has no branch of the name asked for."""
