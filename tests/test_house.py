"""The house plan, checked on every run: imports flow down the floors, no loop, modules of one
concept, settings read in one place, our own imports at the top of modules, ruff clean.

The floors are import-linter contracts in ``pyproject.toml`` (``[tool.importlinter]``); the
rest is read here from the source with ``ast``.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OURS = ("indexcore", "pages")
MAX_LINES = 600
MAX_LAZY_IMPORTS = 10


def _sources() -> list[Path]:
    return sorted([*(ROOT / "indexcore").rglob("*.py"), *(ROOT / "pages").glob("*.py")])


def _tool(name: str) -> list[str]:
    exe = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if exe is None:
        pytest.skip(f"{name} is not installed (scripts/install.sh test installs it)")
    return [exe]


def test_import_contracts_kept() -> None:
    out = subprocess.run([*_tool("lint-imports"), "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "0 broken" in out.stdout


def test_ruff_clean() -> None:
    out = subprocess.run([*_tool("ruff"), "check", "indexcore", "pages", "tests", "bench", "scripts", "app.py"],
                         cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-4000:]


def _own_import(node: ast.AST) -> bool:
    if isinstance(node, ast.ImportFrom):
        return node.level > 0 or (node.module or "").split(".")[0] in OURS
    if isinstance(node, ast.Import):
        return any(a.name.split(".")[0] in OURS for a in node.names)
    return False


def lazy_imports() -> list[tuple[str, int, str]]:
    """Imports of our own modules inside functions: (file, line, the reason comment on that line
    or the line above, '' when there is none)."""
    found = []
    for path in _sources():
        text = path.read_text()
        lines = text.splitlines()
        for fn in ast.walk(ast.parse(text)):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(fn):
                if _own_import(node):
                    here = lines[node.lineno - 1]
                    above = lines[node.lineno - 2].strip() if node.lineno > 1 else ""
                    reason = here.split("#", 1)[1].strip() if "#" in here else \
                        above[1:].strip() if above.startswith("#") else ""
                    found.append((str(path.relative_to(ROOT)), node.lineno, reason))
    return sorted(set(found))


def test_few_lazy_imports_each_with_a_reason() -> None:
    found = lazy_imports()
    assert len(found) <= MAX_LAZY_IMPORTS, "\n".join(f"{f}:{n}" for f, n, _ in found)
    assert not [x for x in found if not x[2]], "a lazy import of our own code needs a one-line reason"


def test_modules_of_one_concept_stay_small() -> None:
    big = {str(p.relative_to(ROOT)): n for p in _sources() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not big, big


def test_settings_read_in_one_module() -> None:
    readers = {str(p.relative_to(ROOT)) for p in [*_sources(), ROOT / "app.py"]
               if re.search(r"INDEXCORE_[A-Z]", p.read_text())}
    assert readers <= {"indexcore/config.py"}, readers


def test_no_import_loop() -> None:
    """No two modules of ours reach each other through top-level imports (the contracts check
    floors; this checks the rooms inside one floor)."""
    graph: dict[str, set[str]] = {}
    names = {}
    for path in _sources():
        rel = path.relative_to(ROOT).with_suffix("")
        mod = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        names[mod] = path
    for mod, path in names.items():
        deps = graph.setdefault(mod, set())
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in OURS:
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    deps.add(full if full in names else node.module)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names if a.name in names)
    for mod in graph:  # a package's __init__ importing its own submodules is not a loop
        graph[mod] = {d for d in graph[mod] if d in names and d != mod and not d.startswith(mod + ".")
                      and not mod.startswith(d + ".")}
    state: dict[str, int] = {}
    loops = []

    def visit(m: str, stack: list[str]) -> None:
        state[m] = 1
        for d in sorted(graph[m]):
            if state.get(d) == 1:
                loops.append(stack[stack.index(d):] + [d])
            elif d not in state:
                visit(d, [*stack, d])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert not loops, loops[:5]
