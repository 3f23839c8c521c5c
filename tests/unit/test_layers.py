"""The import graph of raglabel: no import cycle of any length (Textual's app <-> screens
idiom aside), every package says what it owns, the architecture page's Layout table
matches the tree, and SQL is written only in storage.

The import-linter contracts are checked by .ci/run (``lint-imports``) and shown able to
fail by tests/e2e/test_layer_contracts.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[2]


#: The one cycle allowed, Textual's idiom: the app imports its screens (and the command
#: palette's provider) to show them, and each of those names the app that hosts it, for
#: its typed ``self.app``, in an annotation-only import.
APP = "raglabel.tui.app"
HOSTED = re.compile(r"raglabel\.tui\.(screens\.\w+|commands)")


def import_cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Every import cycle of ``graph``, of any length: its strongly connected components
    of more than one module (Tarjan's, without recursion), each sorted, in sorted order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            module, imported = work[-1]
            step = next(imported, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(graph.find_modules_directly_imported_by(step)))))
                elif step in on_stack:
                    low[module] = min(low[module], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[module])
            if low[module] == index[module]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == module:
                        break
                if len(component) > 1 or graph.direct_import_exists(
                    importer=module, imported=module
                ):
                    found.append(sorted(component))
    return sorted(found)


def _described(graph: grimp.ImportGraph, cycle: list[str]) -> str:
    """One shortest way round ``cycle``, as a chain of imports."""
    first = cycle[0]
    back = min(
        (
            graph.find_shortest_chain(importer=step, imported=first, as_packages=False)
            for step in graph.find_modules_directly_imported_by(first)
            if step in cycle
        ),
        key=lambda chain: len(chain or ()),
    )
    return " -> ".join([first, *(back or ())])


def _whole_graph() -> grimp.ImportGraph:
    """Every import in raglabel, annotation-only ones included: a cycle among those still
    ties the modules together for whoever reads or changes them."""
    graph = grimp.build_graph("raglabel", exclude_type_checking_imports=False, cache_dir=None)
    for module in sorted(graph.modules):
        if HOSTED.fullmatch(module) and graph.direct_import_exists(importer=module, imported=APP):
            graph.remove_import(importer=module, imported=APP)
    return graph


def test_no_import_cycle_of_any_length() -> None:
    graph = _whole_graph()
    cycles = import_cycles(graph)
    assert cycles == [], "\n".join(_described(graph, cycle) for cycle in cycles)


def test_screens_name_the_app_in_annotations_only() -> None:
    # The idiom's imports are left out of the cycle search above; at run time they would
    # be a real cycle (and an import order that only works by luck).
    graph = grimp.build_graph("raglabel", exclude_type_checking_imports=True, cache_dir=None)
    reaching = sorted(
        module
        for module in graph.find_modules_that_directly_import(APP)
        if HOSTED.fullmatch(module)
    )
    assert reaching == []


def test_the_cycle_search_finds_long_cycles_and_only_cycles() -> None:
    graph = grimp.ImportGraph()
    for importer, imported in [
        ("pkg.a", "pkg.b"),
        ("pkg.b", "pkg.c"),
        ("pkg.c", "pkg.a"),  # three long
        ("pkg.c", "pkg.d"),
        ("pkg.d", "pkg.e"),
        ("pkg.e", "pkg.d"),  # two long, reached from the first
        ("pkg.f", "pkg.f"),  # a module importing itself
        ("pkg.f", "pkg.a"),  # into a cycle, not on one
    ]:
        graph.add_import(importer=importer, imported=imported)
    assert import_cycles(graph) == [["pkg.a", "pkg.b", "pkg.c"], ["pkg.d", "pkg.e"], ["pkg.f"]]
    assert _described(graph, ["pkg.a", "pkg.b", "pkg.c"]) == "pkg.a -> pkg.b -> pkg.c -> pkg.a"


def test_a_deliberate_long_cycle_in_the_package_is_found() -> None:
    # schema imports runs (a migration fills the rows runs encode), runs imports clock:
    # clock importing schema would close a cycle of three, annotation-only or not.
    graph = _whole_graph()
    graph.add_import(importer="raglabel.storage.clock", imported="raglabel.storage.schema")
    assert ["raglabel.storage.clock", "raglabel.storage.runs", "raglabel.storage.schema"] in (
        import_cycles(graph)
    )


def test_every_package_says_what_it_owns() -> None:
    for init in sorted((ROOT / "raglabel").glob("*/__init__.py")):
        text = init.read_text(encoding="utf-8").lstrip()
        assert text.startswith('"""') and len(text.split('"""')[1].split()) >= 8, init


def test_the_architecture_layout_table_matches_the_tree() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = page.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    listed = {
        cell.strip("`").rstrip("/")
        for line in section.splitlines()
        if line.startswith("| `")
        for cell in [line.split("|")[1].strip()]
    }
    packages = {
        str(init.parent.relative_to(ROOT)) for init in (ROOT / "raglabel").glob("*/__init__.py")
    }
    assert packages <= listed, (
        f"add {sorted(packages - listed)} to docs/architecture.md's Layout table"
    )
    missing = sorted(path for path in listed if not (ROOT / path).exists())
    assert missing == [], f"docs/architecture.md's Layout table names {missing}, which do not exist"


def test_sql_is_written_only_in_storage() -> None:
    # Storage owns the schema: SQL anywhere else would break silently on a migration.
    statement = re.compile(r"\b(SELECT|INSERT INTO|UPDATE \w+ SET|DELETE FROM|CREATE TABLE)\b")
    outside = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sorted((ROOT / "raglabel").rglob("*.py"))
        if "storage" not in path.relative_to(ROOT / "raglabel").parts
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if statement.search(line)
    ]
    assert outside == []
