"""Several index files in one app: one `Service` per file (its snapshot, retriever and writer),
named by the file's stem. Every request names its index (a REST field, an MCP argument, the
model name of the OpenAI route, the UI's selector); none names one, the default (the first
file) answers. A file's services never see another file's nodes: each has its own handle.
"""
from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path
from typing import Iterator

from ..config import Settings
from ..errors import ConfigError
from .asklog import per_index
from .service import Service

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
SIDE_FILES = (".previous.db", ".incoming.db")  # what open_index keeps beside a file: not indexes
MAX_INDEXES = 64  # each loads a graph and a query embedder: a folder of thousands is refused


class UnknownIndex(ConfigError):
    """A request names an index this app does not serve."""


def index_files(settings: Settings) -> list[Path]:
    """The files to serve: db_path then more_db_paths (os.pathsep-separated); a folder stands
    for every *.db in it, by name. The same file given twice is served once."""
    raw = [settings.db_path, *[p for p in settings.more_db_paths.split(os.pathsep) if p.strip()]]
    out: list[Path] = []
    seen: set[Path] = set()
    for entry in raw:
        path = Path(entry)
        if path.is_dir():
            found = sorted(f for f in path.glob("*.db") if f.is_file() and not f.name.endswith(SIDE_FILES))
            if not found:
                raise ConfigError(f"no index files (*.db) in the folder {path}")
        else:
            found = [path]
        for f in found:
            key = f.resolve()
            if key not in seen:
                seen.add(key)
                out.append(f)
    if len(out) > MAX_INDEXES:
        raise ConfigError(f"{len(out)} index files; one app serves at most {MAX_INDEXES}")
    return out


def name_of(path: Path) -> str:
    name = path.name[:-3] if path.name.endswith(".db") else path.name
    if not NAME.match(name):
        raise ConfigError(f"index file {path}: its name must be letters, digits, '.', '_' or '-' "
                          "(at most 64), as requests name it")
    return name


class Indexes:
    """The app's index files by name, the default first."""

    def __init__(self, services: dict[str, Service]):
        if not services:
            raise ConfigError("no index to serve")
        self.services = dict(services)
        self.default = next(iter(self.services))

    @classmethod
    def from_settings(cls, settings: Settings) -> "Indexes":
        services: dict[str, Service] = {}
        for path in index_files(settings):
            name = name_of(path)
            if name in services:
                raise ConfigError(f"two index files are named {name!r} ({services[name].settings.db_path} and "
                                  f"{path}); rename one: requests pick an index by name")
            own = per_index(settings, name, first=not services)  # one question log per index
            services[name] = Service(dataclasses.replace(own, db_path=path, more_db_paths=""))
        return cls(services)

    @classmethod
    def of(cls, service: Service) -> "Indexes":
        """One service, as the app has always served it."""
        stem = _stem(service)
        return cls({stem if NAME.match(stem) else "default": service})

    @property
    def service(self) -> Service:
        return self.services[self.default]

    @property
    def names(self) -> list[str]:
        return list(self.services)

    def __iter__(self) -> Iterator[tuple[str, Service]]:
        return iter(self.services.items())

    def __len__(self) -> int:
        return len(self.services)

    def get(self, name: str | None) -> Service:
        """The service of `name` (None or "": the default); UnknownIndex for any other name."""
        if name is None or name == "":
            return self.service
        found = self.services.get(name) if isinstance(name, str) else None
        if found is None:
            shown = repr(name) if len(repr(name)) <= 70 else repr(name)[:67] + "..."
            raise UnknownIndex(f"no index named {shown}; this app serves: {', '.join(self.names)}")
        return found

    def name_of(self, service: Service) -> str:
        return next(n for n, s in self.services.items() if s is service)

    def describe(self) -> list[dict]:
        """One line per index for /health, list_indexes and /v1/models (no work: the loaded
        snapshot's counts, the cached description of the file)."""
        out = []
        for name, svc in self.services.items():
            loaded = svc.handle.loaded
            path = Path(svc.settings.db_path)
            row = {"name": name, "default": name == self.default, "path": str(path), "exists": path.exists(),
                   "loaded": loaded is not None, "nodes": int(loaded.n_nodes) if loaded is not None else None,
                   # exact, or the approximate index past fact_ann_min_vectors (and why not, if not)
                   "fact_search": loaded.fact_search.how if loaded is not None else None,
                   "docs_version": svc.docs_version(),  # pages, indexing time, the commit synced
                   "job": None if svc.job is None else {"name": svc.job.name, "done": svc.job.done,
                                                         "error": svc.job.error or None}}
            if row["exists"]:
                try:
                    info = svc.description()
                    row.update(embedding_model=info.get("embedding_model"), docs_root=info.get("docs_root"))
                except Exception as exc:  # noqa: BLE001 - one unreadable file must not hide the others
                    row["error"] = str(exc)[:200]
            out.append(row)
        return out

    def set_llm(self, base_url: str, model: str, api_key: str | None) -> None:
        """The UI's LLM settings reach every index's service (they answer with one model)."""
        for svc in self.services.values():
            svc.settings.llm_base_url, svc.settings.llm_model = base_url, model
            if api_key:
                svc.settings.llm_api_key = api_key


def _stem(service: Service) -> str:
    name = Path(service.settings.db_path).name
    return name[:-3] if name.endswith(".db") else name
