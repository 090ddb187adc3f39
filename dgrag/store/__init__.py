"""The index file: connection, migrations and every SQL statement of dgrag."""
from .connect import open_connection, sqlite_module
from .store import NODE_TYPES, VECTOR_TYPES, Store

__all__ = ["Store", "open_connection", "sqlite_module", "NODE_TYPES", "VECTOR_TYPES"]
