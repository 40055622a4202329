"""record/ has no import cycle, and no private name crosses a module boundary anywhere in src/.

Every import statement counts, at any depth (an import inside a function
hid the reader → pipeline → layouts → frontend → reader cycle).
"""

import ast
import pathlib

import ember

SRC = pathlib.Path(ember.__file__).parent


def module_name(path):
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path):
    """(module imported, names imported from it) for every import in ``path``, relative ones resolved."""
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            yield module, [alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, []


def test_record_imports_form_no_cycle():
    modules = {module_name(p): p for p in (SRC / "record").glob("*.py")}
    graph = {}
    for name, path in modules.items():
        targets = set()
        for module, names in imports_of(path):
            targets.add(module)
            targets.update(f"{module}.{n}" for n in names)  # from . import x
        graph[name] = {t for t in targets if t in modules and t != name}
    done, stack = set(), []

    def visit(node):
        assert node not in stack, f"import cycle: {' -> '.join(stack[stack.index(node) :] + [node])}"
        if node in done:
            return
        stack.append(node)
        for target in sorted(graph[node]):
            visit(target)
        stack.pop()
        done.add(node)

    for node in sorted(graph):
        visit(node)
    # The strict reader stands at the base: beside it only its guard, limits, source and the sink Protocols.
    assert graph["ember.record.reader"] <= {
        "ember.record.guard",
        "ember.record.limits",
        "ember.record.source",
        "ember.record.sinks",
    }
    assert graph["ember.record.sinks"] == set()
    assert "ember.record.parts" in graph and "ember.record.pipeline" in graph["ember.record.parts"]


def test_no_private_name_is_imported_across_modules():
    found = [
        f"{path.relative_to(SRC.parent)}: from {module} import {name}"
        for path in sorted(SRC.rglob("*.py"))
        for module, names in imports_of(path)
        for name in names
        if name.startswith("_") and not name.startswith("__")
    ]
    assert found == []
