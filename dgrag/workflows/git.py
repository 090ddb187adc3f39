"""A docs repository checked out at its newest commit, through the `git` program (no library).

Each repository gets one clone under the cache folder (`Settings.sync_cache_dir`), named by a hash
of where it comes from. A sync fetches, then checks the branch's newest commit out detached and
forced: the clone is dgrag's own, so nothing in its work tree is anyone's edit. Every git call has
the settings' time limit and never asks for a password (GIT_TERMINAL_PROMPT=0): a private
repository without credentials fails with git's own message instead of waiting for a terminal.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

try:
    import fcntl
except ImportError:  # Windows: no lock between processes; syncs of one clone must not overlap there
    fcntl = None

from ..config import Settings
from ..errors import BranchMissing, GitMissing, NotARepository, SyncError

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://|^[\w.-]+@[\w.-]+:")  # scheme://... or scp-like user@host:path
_BRANCH = re.compile(r"^(?!-)(?!.*\.\.)[\w./-]{1,200}$")  # a name, never an option or a range


@dataclass(frozen=True)
class Checkout:
    """A repository's work tree at one commit."""

    repo: str  # as given (a URL, or the absolute path of a local repository)
    branch: str
    commit: str  # the full sha
    commit_time: str  # the committer date, ISO 8601 with its offset
    path: Path  # the work tree in the cache

    def as_dict(self) -> dict:
        return {"repo": self.repo, "branch": self.branch, "commit": self.commit, "commit_time": self.commit_time,
                "path": str(self.path)}


def cache_root(settings: Settings) -> Path:
    if settings.sync_cache_dir is not None:
        return Path(settings.sync_cache_dir)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "dgrag" / "repos"


def normalise_repo(repo: str) -> str:
    """A URL as given; a local path made absolute, after checking that it is a repository."""
    repo = repo.strip()
    if not repo:
        raise NotARepository("which repository? give a git URL or the path of a local repository")
    if _URL.match(repo):
        return repo
    path = Path(repo).expanduser()
    if not path.is_dir():
        raise NotARepository(f"no repository at {repo}: not a folder here, and not a URL (https://, ssh://, git@host:)")
    try:
        bare = git(["rev-parse", "--is-bare-repository"], cwd=path, timeout=30.0) == "true"
        top = Path(git(["rev-parse", "--absolute-git-dir" if bare else "--show-toplevel"], cwd=path, timeout=30.0))
    except GitMissing:
        raise
    except SyncError:
        raise NotARepository(f"{repo} is not a git repository (no .git in it or above it)") from None
    if top.resolve() != path.resolve() and path.resolve().is_relative_to(top.resolve()):
        # a folder inside a repository: say which, rather than sync all of it
        rel = path.resolve().relative_to(top.resolve()).as_posix()
        raise NotARepository(f"{repo} is a folder inside the repository {top}: give that, with --docs {rel}")
    return str(top)


def clone_folder(settings: Settings, repo: str) -> Path:
    """The repository's folder in the cache: a readable name and a hash of where it comes from."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", repo.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git"))[:40] or "repo"
    return cache_root(settings) / f"{name}-{hashlib.sha256(repo.encode()).hexdigest()[:12]}"


@contextlib.contextmanager
def clone_lock(folder: Path) -> Iterator[None]:
    """One sync of a clone at a time, across processes (a lock file beside it): another sync
    checking out another branch would change the files under this one's index run."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.with_name(folder.name + ".lock"), "a+b") as fh:
        if fcntl is not None:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)  # released when the file closes
        yield


def checkout(settings: Settings, repo: str, branch: str = "") -> Checkout:
    """Clone `repo` into the cache (or fetch into the clone there), then check out the newest
    commit of `branch` (its default branch when ""). Raises GitMissing, NotARepository,
    BranchMissing or SyncError (a git command that failed or ran past `git_timeout_s`)."""
    if branch and not _BRANCH.match(branch):
        raise BranchMissing(f"not a branch name: {branch!r}")
    repo = normalise_repo(repo)
    folder = clone_folder(settings, repo)
    t = settings.git_timeout_s
    if _our_clone(folder, repo):
        git(["fetch", "--prune", "--quiet", "origin"], cwd=folder, timeout=t)
    else:
        _clone(repo, folder, t)
    branch = branch or _default_branch(folder, t)
    ref = f"refs/remotes/origin/{branch}"
    commit = git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], cwd=folder, timeout=t, check=False)
    if not commit:
        raise BranchMissing(f"{repo} has no branch {branch!r} (it has: {', '.join(_branches(folder, t)) or 'none'})")
    git(["checkout", "--quiet", "--force", "--detach", commit], cwd=folder, timeout=t)
    git(["clean", "-ffdxq"], cwd=folder, timeout=t)  # nothing left over that the commit does not hold
    when = git(["show", "-s", "--format=%cI", commit], cwd=folder, timeout=t)
    return Checkout(repo, branch, commit, when, folder)


def _our_clone(folder: Path, repo: str) -> bool:
    """A finished clone of this repository (a folder left half-written or foreign is cloned again)."""
    if not (folder / ".git").is_dir():
        return False
    url = git(["config", "--get", "remote.origin.url"], cwd=folder, timeout=30.0, check=False)
    return url == repo


def _clone(repo: str, folder: Path, timeout: float) -> None:
    """Clone into a folder beside the target, then move it in: an interrupted clone leaves no
    folder that looks finished."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    part = folder.with_name(folder.name + ".part")
    shutil.rmtree(part, ignore_errors=True)
    try:
        git(["clone", "--quiet", "--no-checkout", "--", repo, str(part)], cwd=folder.parent, timeout=timeout)
    except SyncError as exc:
        shutil.rmtree(part, ignore_errors=True)
        if "not a git repository" in str(exc).lower() or "does not appear to be" in str(exc):
            raise NotARepository(f"{repo} is not a git repository ({exc})") from None
        raise
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(part, folder)


def _default_branch(folder: Path, timeout: float) -> str:
    head = git(["symbolic-ref", "--quiet", "refs/remotes/origin/HEAD"], cwd=folder, timeout=timeout, check=False)
    if not head:  # not recorded by the clone: ask the remote
        git(["remote", "set-head", "origin", "--auto"], cwd=folder, timeout=timeout, check=False)
        head = git(["symbolic-ref", "--quiet", "refs/remotes/origin/HEAD"], cwd=folder, timeout=timeout, check=False)
    if not head:
        raise BranchMissing("the repository names no default branch (an empty repository?); give one with --branch")
    return head.removeprefix("refs/remotes/origin/")


def _branches(folder: Path, timeout: float) -> list[str]:
    out = git(["for-each-ref", "--format=%(refname:lstrip=3)", "refs/remotes/origin/"], cwd=folder,
              timeout=timeout, check=False)
    return [b for b in out.splitlines() if b and b != "HEAD"][:20]


def git(args: list[str], *, cwd: Path, timeout: float, check: bool = True) -> str:
    """Run one git command; its stdout, stripped. A failure is a SyncError with git's last line
    of stderr (with `check` False: "" instead)."""
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    try:
        done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise GitMissing("git is not installed (no `git` on PATH); install it to sync a repository") from None
    except subprocess.TimeoutExpired:
        raise SyncError(f"git {args[0]} ran past {timeout:g} s (git_timeout_s) and was stopped") from None
    if done.returncode != 0:
        if not check:
            return ""
        last = next((line for line in reversed(done.stderr.strip().splitlines()) if line.strip()), "")
        raise SyncError(f"git {args[0]} failed: {last or f'exit status {done.returncode}'}")
    return done.stdout.strip()
