"""Packaging: every package that dgrag imports is declared in pyproject.toml, and the torch-based
backends (the `models` extra) and the ANN library (the `ann` extra) are imported only lazily,
inside the functions that use them, so the default install (no torch) serves the default models. scripts/check_install.sh proves the
same on a real non-editable install."""
from __future__ import annotations

import ast
import importlib.metadata as md
import subprocess
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
SOURCES = sorted((ROOT / "dgrag").rglob("*.py")) + [ROOT / "app.py"]


def _names(key: str | None) -> set[str]:
    project = PYPROJECT["project"]
    deps = project["dependencies"] if key is None else project["optional-dependencies"][key]
    return {canonicalize_name(Requirement(d).name) for d in deps}


def imports(path: Path) -> list[tuple[str, bool, int]]:
    """(top-level module, imported at module level, line) of each absolute import, leaving out
    the fallbacks inside `except ImportError` handlers."""
    out: list[tuple[str, bool, int]] = []

    def visit(node: ast.AST, module_level: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ExceptHandler):
                continue  # an optional fallback
            if isinstance(child, ast.Import):
                out.extend((a.name.split(".")[0], module_level, child.lineno) for a in child.names)
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                out.append((child.module.split(".")[0], module_level, child.lineno))
            inner = module_level and not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            visit(child, inner)

    visit(ast.parse(path.read_text(encoding="utf-8")), True)
    return out


_DISTRIBUTIONS = md.packages_distributions()  # module -> distributions, read once


def _distribution(module: str) -> set[str]:
    return {canonicalize_name(d) for d in _DISTRIBUTIONS.get(module, [])}


def test_every_imported_package_is_declared():
    default, models = _names(None), _names("models") | _names("ann")
    undeclared = []
    for path in SOURCES:
        for module, _, line in imports(path):
            if module in sys.stdlib_module_names or module in ("dgrag", "__future__"):
                continue
            dists = _distribution(module)
            if not dists or not dists & (default | models):
                undeclared.append(f"{path.relative_to(ROOT)}:{line} imports {module} ({', '.join(dists) or 'not installed'})")
    assert not undeclared, "imported but not declared in pyproject.toml:\n" + "\n".join(undeclared)


def test_the_models_and_ann_extras_are_imported_only_lazily():
    default, models = _names(None), (_names("models") | _names("ann")) - _names(None)
    eager = []
    for path in SOURCES:
        for module, module_level, line in imports(path):
            dists = _distribution(module)
            if module_level and dists & models and not dists & default:
                eager.append(f"{path.relative_to(ROOT)}:{line} imports {module} at module level")
    assert not eager, "the default install has no torch stack:\n" + "\n".join(eager)


def test_importing_every_module_loads_no_torch():
    """Every module of the package imported (what a module imports at its top, transitively):
    torch, transformers, sentence-transformers and FlagEmbedding stay out of the process."""
    code = """
import importlib, pkgutil, sys
import dgrag
for m in pkgutil.walk_packages(dgrag.__path__, "dgrag."):
    if not m.name.endswith("__main__"):
        importlib.import_module(m.name)
print("HEAVY", sorted(m for m in ("torch", "transformers", "sentence_transformers", "FlagEmbedding") if m in sys.modules))
"""
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "HEAVY []" in res.stdout, res.stdout


def test_every_data_file_of_the_package_is_package_data():
    """A non-editable install ships only what `package-data` names: every file the package reads
    (word lists, prompts, migrations) must match one of its globs, or the installed copy breaks."""
    globs = PYPROJECT["tool"]["setuptools"]["package-data"]["dgrag"]
    shipped = {p.relative_to(ROOT / "dgrag").as_posix() for g in globs for p in (ROOT / "dgrag").glob(g)}
    data = [p.relative_to(ROOT / "dgrag").as_posix() for p in (ROOT / "dgrag").rglob("*")
            if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts]
    assert any(d.startswith("enrich/openie_words/") for d in data)
    missing = [d for d in data if d not in shipped]
    assert not missing, f"not in [tool.setuptools.package-data]: {missing}"
