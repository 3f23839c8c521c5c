"""The README is a short door into the docs site, and the site's parts hold together.

``mkdocs build --strict`` (a step of .ci/run) fails on a dangling link or anchor inside the
site; these checks need no MkDocs: the README's length and its links into docs/, the
quick start CI runs, the nav, and the hook that writes the generated reference parts.
"""

from __future__ import annotations

import importlib.util
import json
import re
import tomllib
import unicodedata
from pathlib import Path
from types import ModuleType

import pytest
from docs_pages import DOCS, ROOT, pages

README = ROOT / "README.md"
LINK = re.compile(r"\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """The anchor Python-Markdown's toc extension gives a heading."""
    text = re.sub(r"[`*]", "", heading)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(page: Path) -> set[str]:
    text = page.read_text(encoding="utf-8")
    text = re.sub(r"^ *```.*?^ *```", "", text, flags=re.S | re.M)
    return {slug(line.lstrip("#")) for line in text.splitlines() if re.match(r"#{1,6} ", line)}


def hook() -> ModuleType:
    path = DOCS / "hooks" / "generated.py"
    spec = importlib.util.spec_from_file_location("docs_generated", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_is_short() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines: move the detail into docs/"


def test_every_readme_link_into_the_docs_resolves() -> None:
    links = LINK.findall(README.read_text(encoding="utf-8"))
    into_docs = [link for link in links if link.startswith("docs/")]
    assert len(into_docs) >= 10
    for link in into_docs:
        target, _, anchor = link.partition("#")
        page = ROOT / target
        assert page.is_file(), f"README.md links to {target}, which does not exist"
        if anchor:
            assert anchor in anchors(page), f"README.md links to {link}: no such heading"
    for link in links:
        # Links inside the README itself, and none to a page outside the checkout.
        if link.startswith("#"):
            assert link[1:] in anchors(README), link
        else:
            assert link.startswith("docs/"), f"README.md links to {link}, outside docs/"


def test_the_slug_rule_is_python_markdowns() -> None:
    assert slug("Samples files (`--samples`)") == "samples-files-samples"
    assert slug("What is safe, and when") == "what-is-safe-and-when"
    assert slug("Judging answers (`raglabel judge DB --answers`)") == (
        "judging-answers-raglabel-judge-db-answers"
    )


def quick_start() -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line and not line.startswith("#")]


def test_the_quick_start_is_two_commands_and_ci_runs_the_second() -> None:
    demo, suite = quick_start()
    assert demo.endswith(".venv/bin/raglabel demo")
    assert suite == (
        "python3.11 -m venv .venv && .venv/bin/pip install -q -e '.[test]'"
        " && .venv/bin/pytest -n auto --hypothesis-profile=thorough"
    )
    steps = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert suite in steps, ".ci/run must run the README's test command as it is written"
    docs = steps[steps.index(suite) + 1 :]
    assert ".venv/bin/pip install -q --no-compile -e '.[docs]'" in " ".join(docs)
    assert ".venv/bin/mkdocs build --strict" in " ".join(docs)


def test_the_docs_extra_installs_the_site_tools() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    extra = " ".join(config["project"]["optional-dependencies"]["docs"])
    for package in ("mkdocs>=", "mkdocs-material>=", "mkdocstrings[python]>="):
        assert package in extra, package


def test_the_built_site_is_ignored() -> None:
    assert "site/" in (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()


def nav() -> list[str]:
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    section = text.split("\nnav:\n", 1)[1]
    return re.findall(r"^\s+- (?:[^:\n]+: )?(\S+\.md)$", section, re.M)


def test_every_page_is_in_the_nav_and_every_nav_entry_exists() -> None:
    listed = nav()
    assert len(listed) == len(set(listed))
    assert sorted(listed) == pages()
    for section in ("Guide", "Reference", "Benchmarks", "Architecture", "Changelog"):
        assert f"  - {section}:" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")


def test_the_cli_page_has_every_command_and_its_help() -> None:
    generated = hook()
    from raglabel.cli.main import COMMANDS

    page = generated.cli_reference()
    parsers = dict(generated.command_parsers())
    names = [name for module in COMMANDS.values() for name in module]
    assert list(parsers) == ["raglabel", *(f"raglabel {name}" for name in names)]
    with generated.help_width():
        for name, parser in parsers.items():
            assert f"## `{name}`\n\n```text\n{parser.format_help().rstrip()}\n```" in page
    assert "--grade-map" in page and "--add-annotator" in page


def test_the_schema_page_has_every_schema_and_its_fields() -> None:
    page = hook().schemas_reference()
    for path in sorted((ROOT / "schemas").glob("*.schema.json")):
        schema = json.loads(path.read_text(encoding="utf-8"))
        assert f"## `schemas/{path.name}`" in page
        for field in schema.get("properties", {}):
            assert f"| `{field}` |" in page, (path.name, field)


def test_the_architecture_page_has_every_contract() -> None:
    page = hook().contracts_reference()
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    for contract in config["tool"]["importlinter"]["contracts"]:
        assert f"### `{contract['id']}`: {contract['name']}" in page
        for module in contract.get("layers", []) + contract.get("forbidden_modules", []):
            assert f"`{module}`" in page


def test_every_marker_names_a_generator_and_an_unknown_one_fails() -> None:
    generated = hook()
    used = {
        name
        for page in pages()
        for name in generated.MARKER.findall((DOCS / page).read_text(encoding="utf-8"))
    }
    assert used == set(generated.GENERATORS)

    class Page:
        class file:  # noqa: N801 (MkDocs' page.file.src_path, as the hook reads it)
            src_path = "guide/eval.md"

    with pytest.raises(ValueError, match=re.escape("guide/eval.md: no generator named 'nope'")):
        generated.on_page_markdown("<!-- generated: nope -->\n", Page(), None, None)
    kept = "text <!-- generated: cli --> inline is not a marker\n"
    assert generated.on_page_markdown(kept, Page(), None, None) == kept


def test_the_home_page_takes_the_readme_sections_it_names() -> None:
    # docs/index.md includes the README's intro and quick start (pymdownx.snippets), so the
    # two never differ; each section it names must be marked in the README.
    home = (DOCS / "index.md").read_text(encoding="utf-8")
    sections = re.findall(r'^--8<-- "README\.md:([a-z]+)"$', home, re.M)
    assert sections == ["intro", "quickstart"]
    readme = README.read_text(encoding="utf-8")
    for name in sections:
        start, end = f"<!-- --8<-- [start:{name}] -->", f"<!-- --8<-- [end:{name}] -->"
        assert readme.count(start) == 1 and readme.count(end) == 1, name
        assert readme.index(start) < readme.index(end), name
    quick = readme.split("[start:quickstart] -->", 1)[1].split("<!-- --8<-- [end:", 1)[0]
    for command in quick_start():
        assert f"\n{command}\n" in quick, command
