"""dgrag — DualGraph RAG: graph-augmented QA over Markdown docs, in one SQLite file.

Heavy dependencies (torch, sentence-transformers, gradio) are imported lazily by the
modules that need them, so `import dgrag` and `dgrag --help` stay fast.
"""

__version__ = "0.1.0"

from .config import RetrievalConfig, Settings  # noqa: E402
from .errors import DgragError  # noqa: E402

__all__ = ["Settings", "RetrievalConfig", "DgragError", "__version__"]
