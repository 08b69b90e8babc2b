"""The package's modules each have one job and import each other without
a cycle (lazy imports inside functions included)."""

from __future__ import annotations

import ast
import os
import unittest
from typing import Dict, List, Set

PKG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pipetop_publish")


def sibling_imports(path: str) -> Set[str]:
    """The package modules a module imports, anywhere in its body."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    out: Set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                out.add(node.module.split(".")[0])
            else:
                out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pipetop_publish."):
            out.add(node.module.split(".")[1])
    return out


def graph() -> Dict[str, List[str]]:
    g = {}
    for name in sorted(os.listdir(PKG)):
        if name.endswith(".py"):
            mod = name[:-3]
            g[mod] = sorted(sibling_imports(os.path.join(PKG, name)) - {mod})
    return g


class LayoutTest(unittest.TestCase):
    def test_no_import_cycle(self) -> None:
        g = graph()
        done: Set[str] = set()

        def visit(mod: str, path: List[str]) -> None:
            if mod in path:
                self.fail("import cycle: %s" % " -> ".join(path[path.index(mod):] + [mod]))
            if mod in done or mod not in g:
                return
            for dep in g[mod]:
                visit(dep, path + [mod])
            done.add(mod)

        for mod in g:
            if mod != "__init__":  # the package re-exports; modules never import it
                visit(mod, [])

    def test_modules_do_not_import_the_package(self) -> None:
        for mod, deps in graph().items():
            if mod != "__init__":
                self.assertNotIn("__init__", deps, mod)

    def test_stage_names_come_from_the_table(self) -> None:
        # Code names stages through the generated stage module; docstrings
        # may show them.
        names = {"data_wait", "h2d", "forward", "backward", "comm", "optim", "sync", "eval"}
        for name in sorted(os.listdir(PKG)):
            if not name.endswith(".py") or name == "stages.py":
                continue
            with open(os.path.join(PKG, name), encoding="utf-8") as f:
                tree = ast.parse(f.read(), name)
            docs = {id(n.body[0].value) for n in ast.walk(tree)
                    if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef)) and n.body
                    and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
            # Attribute names that happen to match (torch.Tensor.backward).
            attrs = {id(a) for n in ast.walk(tree) if isinstance(n, ast.Call)
                     and getattr(n.func, "attr", getattr(n.func, "id", "")) in ("set", "getattr", "setattr", "hasattr")
                     for a in n.args}
            for n in ast.walk(tree):
                if isinstance(n, ast.Constant) and n.value in names and id(n) not in docs | attrs:
                    self.fail("%s:%d writes the stage %r out; use pipetop_publish.stages" % (name, n.lineno, n.value))


if __name__ == "__main__":
    unittest.main()
