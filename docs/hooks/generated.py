"""MkDocs hook: the parts of the docs that are read from the code, made at build time.

A page asks for one with a marker line, ``<!-- generated: NAME -->``, which this hook
replaces with the Markdown below. Nothing here is written by hand, so these parts cannot
drift from the parser, the schemas or the import contracts they come from. A marker this
hook does not know fails the build. The generators need only raglabel and the standard
library, so the test suite checks them without MkDocs installed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import tomllib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"^<!-- generated: ([a-z_]+) -->$", re.M)

# Help is formatted at this width whatever terminal the build runs in, so the page is the
# same on every machine.
HELP_COLUMNS = "100"


@contextmanager
def help_width() -> Iterator[None]:
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_COLUMNS
    try:
        yield
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before


def command_parsers() -> list[tuple[str, argparse.ArgumentParser]]:
    """``raglabel`` and each of its commands, in the order ``raglabel --help`` lists them."""
    from raglabel.cli.main import build_parser

    parser = build_parser()
    found = [("raglabel", parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found += [(f"raglabel {name}", sub) for name, sub in action.choices.items()]
    return found


def fenced(text: str, language: str) -> str:
    return f"```{language}\n{text.rstrip()}\n```"


def cli_reference() -> str:
    parts = []
    with help_width():
        for name, parser in command_parsers():
            parts.append(f"## `{name}`\n\n{fenced(parser.format_help(), 'text')}")
    return "\n\n".join(parts)


def schema_type(spec: dict[str, Any]) -> str:
    if "$ref" in spec:
        return str(spec["$ref"]).rsplit("/", 1)[-1]
    if "anyOf" in spec:
        return " or ".join(schema_type(option) for option in spec["anyOf"])
    kind = spec.get("type", "any")
    if kind == "array" and "items" in spec:
        return f"array of {schema_type(spec['items'])}"
    if kind == "object" and isinstance(spec.get("additionalProperties"), dict):
        return f"object of {schema_type(spec['additionalProperties'])}"
    return str(kind)


def one_line(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def schemas_reference() -> str:
    parts = []
    for path in sorted((ROOT / "schemas").glob("*.schema.json")):
        schema = json.loads(path.read_text(encoding="utf-8"))
        lines = [f"## `schemas/{path.name}`", ""]
        described = schema.get("description")
        lines += [
            f"**{schema.get('title', path.stem)}**"
            + (f": {one_line(described)}" if described else ""),
            "",
        ]
        required = set(schema.get("required", []))
        properties = schema.get("properties", {})
        if properties:
            lines += ["| field | type | required | what |", "| --- | --- | --- | --- |"]
            for field, spec in properties.items():
                what = one_line(spec.get("description", ""))
                mark = "yes" if field in required else ""
                lines.append(f"| `{field}` | {one_line(schema_type(spec))} | {mark} | {what} |")
            lines.append("")
        lines += [
            '??? note "The whole schema"',
            "",
            *(
                "    " + line if line else ""
                for line in fenced(json.dumps(schema, indent=2), "json").splitlines()
            ),
        ]
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def module_list(modules: list[str]) -> str:
    return ", ".join(f"`{module}`" for module in modules)


def contracts_reference() -> str:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    linter = config["tool"]["importlinter"]
    parts = []
    for contract in linter["contracts"]:
        lines = [f"### `{contract['id']}`: {contract['name']}", "", f"Type: `{contract['type']}`."]
        if contract["type"] == "layers":
            lines += [
                "",
                "From the top layer down; modules on one row (joined by `|`) import none of"
                " each other:",
                "",
            ]
            lines += [f"{n}. `{layer}`" for n, layer in enumerate(contract["layers"], 1)]
        for key, said in (
            ("source_modules", "These modules"),
            ("forbidden_modules", "may not import"),
        ):
            if key in contract:
                lines += ["", f"{said}: {module_list(contract[key])}."]
        if "allow_indirect_imports" in contract:
            indirect = "allowed" if contract["allow_indirect_imports"] else "forbidden too"
            lines += ["", f"Indirect imports: {indirect}."]
        if contract.get("ignore_imports"):
            lines += ["", f"Exceptions: {module_list(contract['ignore_imports'])}."]
        parts.append("\n".join(lines))
    excluded = linter.get("exclude_type_checking_imports", False)
    head = f"Root package `{linter['root_package']}`; imports made only for type checking " + (
        "do not count." if excluded else "count like any other."
    )
    return head + "\n\n" + "\n\n".join(parts)


GENERATORS: dict[str, Callable[[], str]] = {
    "cli": cli_reference,
    "schemas": schemas_reference,
    "contracts": contracts_reference,
}


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    def replace(found: re.Match[str]) -> str:
        name = found.group(1)
        if name not in GENERATORS:
            raise ValueError(
                f"{page.file.src_path}: no generator named {name!r} ({sorted(GENERATORS)})"
            )
        return GENERATORS[name]()

    return MARKER.sub(replace, markdown)
