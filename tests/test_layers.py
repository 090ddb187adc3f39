"""Imports flow one way: no module of dgrag imports, directly or through others, a module that
imports it back (imports inside functions count: they only postpone the cycle)."""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "dgrag"


def _modules(package: Path = PACKAGE) -> dict[str, Path]:
    out = {}
    for path in package.rglob("*.py"):
        parts = path.relative_to(package.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _targets(name: str, path: Path, node: ast.AST, known: set[str]) -> list[str]:
    if isinstance(node, ast.Import):
        wanted = [a.name for a in node.names]
    else:
        base = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        if node.level:
            base = base[:len(base) - node.level + 1]
            prefix = ".".join(base + ([node.module] if node.module else []))
        else:
            prefix = node.module or ""
        wanted = [f"{prefix}.{a.name}" for a in node.names] + [prefix]
    out = []
    for w in wanted:
        while w and w not in known and "." in w:
            w = w.rsplit(".", 1)[0]
        if w in known and w != name:
            out.append(w)
    return out


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    mods = _modules(package)
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                graph[name].update(_targets(name, path, node, set(mods)))
    # a package's __init__ runs before its modules: importing a.b imports a, not a cycle
    for name in graph:
        graph[name] = {t for t in graph[name] if not name.startswith(t + ".")}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_the_cycle_finder_finds_a_cycle_through_three_modules():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def layers(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The same graph between dgrag's top-level modules and subpackages (dgrag.ingest, ...)."""
    def top(m: str) -> str:
        return ".".join(m.split(".")[:2])
    out: dict[str, set[str]] = {top(m): set() for m in graph}
    for m, targets in graph.items():
        out[top(m)].update(top(t) for t in targets if top(t) != top(m) and top(t) != "dgrag")
    return out


def test_dgrag_has_no_import_cycles_between_modules_or_layers():
    graph = import_graph()
    assert "dgrag.embed" in graph["dgrag.ingest.pipeline"]  # the walk sees relative imports
    assert cycles(graph) == []
    assert cycles(layers(graph)) == []  # e.g. ingest -> enrich -> ingest through different modules


# dgrag's layers, lowest first: a package may import only from layers below its own (imports inside
# functions count too: `import_graph` walks every import statement). docs/architecture.md draws it.
LAYERS = [
    {"dgrag.errors", "dgrag.kernels", "dgrag.prompts"},
    {"dgrag.core"},  # its text rules read the kernels' one definition of CJK
    {"dgrag.config"},
    {"dgrag.backends", "dgrag.store"},
    {"dgrag.embed"},
    {"dgrag.ingest"},
    {"dgrag.enrich"},
    {"dgrag.retrieve"},
    {"dgrag.answer"},
    {"dgrag.evaluation", "dgrag.workflows"},
    {"dgrag.web"},
    {"dgrag.cli"},
    {"dgrag.__main__"},
]


def upward_imports(graph: dict[str, set[str]], order: list[set[str]]) -> list[str]:
    rank = {name: i for i, names in enumerate(order) for name in names}
    out = []
    for mod, targets in sorted(layers(graph).items()):
        if mod == "dgrag":
            continue  # the package's __init__ (its version and settings) sits above nothing
        for t in sorted(targets):
            if rank[t] >= rank[mod]:
                out.append(f"{mod} -> {t}")
    return out


def test_the_layer_check_catches_an_import_inside_a_function(tmp_path):
    pkg = tmp_path / "dgrag"
    (pkg / "retrieve").mkdir(parents=True)
    (pkg / "answer").mkdir()
    (pkg / "retrieve" / "__init__.py").write_text("def f():\n    from ..answer import g\n")
    (pkg / "answer" / "__init__.py").write_text("def g():\n    pass\n")
    graph = import_graph(pkg)
    assert upward_imports(graph, [{"dgrag.retrieve"}, {"dgrag.answer"}]) == ["dgrag.retrieve -> dgrag.answer"]
    assert upward_imports(graph, [{"dgrag.answer"}, {"dgrag.retrieve"}]) == []


def test_every_package_of_dgrag_has_a_layer_and_imports_only_below_it():
    graph = import_graph()
    named = set().union(*LAYERS)
    assert set(layers(graph)) - {"dgrag"} == named  # a new package must be given its layer
    assert upward_imports(graph, LAYERS) == []
