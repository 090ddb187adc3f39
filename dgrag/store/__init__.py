"""The index file: connection, migrations and every SQL statement of dgrag, in modules of
functions grouped by tables (meta, nodes, edges, images, vectors, semantic, logs)."""
from .connect import open_connection, sqlite_module
from .rows import NodeRows
from .semantic import entity_id
from .store import Store
from .vectors import NODE_TYPES, VECTOR_TYPES

__all__ = ["Store", "NodeRows", "open_connection", "sqlite_module", "entity_id", "NODE_TYPES", "VECTOR_TYPES"]
