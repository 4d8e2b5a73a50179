"""MkDocs hooks: the generated parts of the documentation site, and its reference check.

Pages hold hand-written prose; where a page contains a marker line ``<!-- generated: NAME -->`` the
hook replaces it at build time with content computed from the code, so that the site can never
drift from what the code does:

* ``openapi``    — the HTTP API: every operation of ``sketchauth_service.app.create_app`` and every schema,
  from the app's own OpenAPI document (which is also published as ``service/openapi.json``);
* ``settings``   — the service settings: field, environment variable, default, ``sketchauth serve``
  flag and meaning, read from the settings class (a frozen dataclass with ``from_env`` or a
  pydantic-settings model: both are understood);
* ``schemes``    — the schemes the service offers, with every parameter's limits, asked of the
  running app through ``GET /v1/schemes`` (the public contract, not the internals);
* ``cli``        — every ``sketchauth`` command with its options, from ``build_parser()``;
* ``benchmarks`` — every JSON result under ``benchmarks/results/``, grouped by benchmark script,
  with its date, commit and CPU; a script with no recorded result says so.

A generator that cannot run (an import fails, the settings class has an unknown shape) logs a
warning, which ``mkdocs build --strict`` turns into a failed build: a broken generator is never
published silently.

The reference check: documentation must be readable on its own, so hand-written pages may cite
papers, standards and sections, never an internal planning document or a tracker number
(:data:`FORBIDDEN` is the pattern); a page that does fails the strict build. Text generated from the code (docstrings,
service descriptions, command help) is checked too once :data:`CHECK_GENERATED` is true.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import json
import logging
import re
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # mkdocs is imported only when it runs the hooks: the renderers are testable without it
    from mkdocs.structure.files import Files

log = logging.getLogger("mkdocs.plugins.sketchauth")

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"

#: Check generated text (API reference, OpenAPI, settings, CLI help) for internal references too.
#: Off while the code's docstrings and help strings still carry them; the hand-written pages are
#: always checked.
CHECK_GENERATED = True

MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.MULTILINE)
#: References a reader cannot follow: the internal specification, tracker numbers, paths outside the repository.
FORBIDDEN = re.compile(r"\bSPEC\b|(?i:\bissues?\s*#?\d+)|\.\./shared/")


# --------------------------------------------------------------------------------------------
# Markdown helpers


def cell(value: object) -> str:
    """One Markdown table cell: pipes escaped, newlines folded."""
    text = "" if value is None else str(value)
    return text.replace("|", "\\|").replace("\n", " ").strip()


def prose(value: object) -> str:
    """Text from the code, safe as Markdown: ``<`` and ``>`` outside code spans become entities.

    Descriptions such as ``'pipeline:<name>'`` would otherwise be read as HTML tags and vanish.
    """
    parts = re.split(r"(`+[^`]*`+)", "" if value is None else str(value))
    return "".join(
        p if p.startswith("`") else p.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") for p in parts
    )


def table(header: Iterable[str], rows: Iterable[Iterable[object]]) -> str:
    """A Markdown table."""
    head = list(header)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def code(value: object) -> str:
    """An inline code span that survives backticks inside the value."""
    text = str(value)
    fence = "``" if "`" in text else "`"
    return f"{fence}{text}{fence}"


# --------------------------------------------------------------------------------------------
# The service app and its OpenAPI document


def _settings_class() -> Any:
    from sketchauth_service.settings import Settings

    return Settings


def _dev_settings(**changes: Any) -> Any:
    """Settings for building the app offline: development mode, nothing read from the build host."""
    settings_cls = _settings_class()
    values = {"dev_mode": True, **changes}
    try:
        return settings_cls(**values)
    except TypeError:
        env = {"SKETCHAUTH_DEV_MODE": "1"}
        env.update({f"SKETCHAUTH_{k.upper()}": str(v) for k, v in changes.items()})
        return settings_cls.from_env(env)


def openapi_document() -> dict[str, Any]:
    """The OpenAPI document of ``sketchauth_service.app.create_app`` (no store is opened to build it)."""
    from sketchauth_service.app import create_app

    logging.getLogger("sketchauth.service").setLevel(logging.ERROR)  # the dev-mode warning
    return create_app(_dev_settings()).openapi()


def _ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def schema_type(schema: Mapping[str, Any]) -> str:
    """A short human-readable type of a JSON schema (links to named schemas)."""
    if "$ref" in schema:
        name = _ref_name(schema["$ref"])
        return f"[{name}](#{name.lower()})"
    for key in ("anyOf", "oneOf"):
        if key in schema:
            parts = [schema_type(s) for s in schema[key]]
            return " or ".join(dict.fromkeys(parts))
    if "allOf" in schema and len(schema["allOf"]) == 1:
        return schema_type(schema["allOf"][0])
    if "enum" in schema:
        return " \\| ".join(code(json.dumps(v)) for v in schema["enum"])
    if "const" in schema:
        return code(json.dumps(schema["const"]))
    kind = schema.get("type")
    if kind == "array":
        items = schema.get("items")
        return f"array of {schema_type(items)}" if items else "array"
    if kind == "object" and isinstance(schema.get("additionalProperties"), Mapping):
        return f"object of {schema_type(schema['additionalProperties'])}"
    if isinstance(kind, list):
        return " or ".join(kind)
    return kind or "any"


_CONSTRAINTS = {
    "minimum": "≥ {}",
    "exclusiveMinimum": "> {}",
    "gt": "> {}",
    "maximum": "≤ {}",
    "exclusiveMaximum": "< {}",
    "lt": "< {}",
    "minLength": "at least {} characters",
    "maxLength": "at most {} characters",
    "minItems": "at least {} items",
    "maxItems": "at most {} items",
    "pattern": "matches `{}`",
}


def constraints(schema: Mapping[str, Any]) -> str:
    """Limits a schema states (bounds, lengths, pattern, default), nested ``anyOf`` included."""
    found = [fmt.format(schema[key]) for key, fmt in _CONSTRAINTS.items() if key in schema]
    for key in ("anyOf", "oneOf"):
        for sub in schema.get(key, ()):
            inner = constraints({k: v for k, v in sub.items() if k != "default"})
            if inner:
                found.append(inner)
    if "default" in schema:
        found.append(f"default {code(json.dumps(schema['default']))}")
    return "; ".join(dict.fromkeys(found))


def _operation_rows(document: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    rows = []
    for path, methods in document.get("paths", {}).items():
        for method, operation in methods.items():
            rows.append((f"`{method.upper()} {path}`", prose(operation.get("summary", "")), _auth(operation)))
    return rows


def _auth(operation: Mapping[str, Any]) -> str:
    return "bearer key" if operation.get("security") else "none"


def _request_body(operation: Mapping[str, Any]) -> str:
    body = operation.get("requestBody")
    if not body:
        return ""
    content = body.get("content", {})
    parts = [f"{code(media)} {schema_type(spec.get('schema', {}))}" for media, spec in content.items()]
    return "Request body: " + ", ".join(parts) + "."


def _responses(operation: Mapping[str, Any]) -> str:
    rows = []
    for status, response in operation.get("responses", {}).items():
        content = response.get("content", {})
        kinds = []
        for media, spec in content.items():
            schema = spec.get("schema")
            kinds.append(f"{code(media)} {schema_type(schema)}" if schema else code(media))
        rows.append((status, prose(response.get("description", "")), ", ".join(kinds)))
    return table(["status", "meaning", "body"], rows)


def _parameters(operation: Mapping[str, Any]) -> str:
    params = operation.get("parameters", [])
    if not params:
        return ""
    rows = [
        (
            code(p["name"]),
            p.get("in", ""),
            schema_type(p.get("schema", {})),
            constraints(p.get("schema", {})),
            prose(p.get("description", "")),
        )
        for p in params
    ]
    return table(["parameter", "in", "type", "limits", "meaning"], rows)


def _property_rows(schema: Mapping[str, Any]) -> list[tuple[str, str, str, str, str]]:
    """One row per property of a JSON Schema object: name, type, required or not, limits, meaning."""
    required = set(schema.get("required", ()))
    return [
        (
            code(name),
            schema_type(spec),
            "yes" if name in required else "no",
            constraints(spec),
            prose(spec.get("description", "")),
        )
        for name, spec in schema.get("properties", {}).items()
    ]


def render_openapi(document: Mapping[str, Any]) -> str:
    """Markdown for every operation and every schema of an OpenAPI document."""
    info = document.get("info", {})
    out = [
        f"OpenAPI {document.get('openapi', '')}, API version {info.get('version', '')}: "
        "[download the document](openapi.json).",
        "",
        "### Operations",
        "",
        table(["operation", "what it does", "authentication"], _operation_rows(document)),
    ]
    for path, methods in document.get("paths", {}).items():
        for method, operation in methods.items():
            out += ["", f"#### `{method.upper()} {path}`", "", prose(operation.get("summary", ""))]
            if operation.get("description"):
                out += ["", prose(operation["description"])]
            for block in (_parameters(operation), _request_body(operation), _responses(operation)):
                if block:
                    out += ["", block]
    out += ["", "### Schemas"]
    for name, schema in document.get("components", {}).get("schemas", {}).items():
        out += ["", f"#### {name}", ""]
        if schema.get("description"):
            out += [prose(schema["description"]), ""]
        if schema.get("properties"):
            out.append(table(["field", "type", "required", "limits", "meaning"], _property_rows(schema)))
        else:
            out.append(f"Type: {schema_type(schema)}.")
    return "\n".join(out)


def render_schemes() -> str:
    """The schemes the service offers, asked of a throw-away app through ``GET /v1/schemes``."""
    from fastapi.testclient import TestClient
    from sketchauth_service.app import create_app

    logging.getLogger("sketchauth.service").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory() as tmp:
        settings = _dev_settings(database_url=f"sqlite:///{tmp}/docs.db")
        with TestClient(create_app(settings)) as client:
            response = client.get("/v1/schemes")
            response.raise_for_status()
            listing = response.json()
    out = []
    for scheme in listing.get("schemes", []):
        samples = scheme.get("min_samples"), scheme.get("max_samples")
        count = f"{samples[0]}" if samples[0] == samples[1] else f"{samples[0]} to {samples[1]}"
        out += [
            "",
            f"### `{scheme['name']}`",
            "",
            prose(scheme.get("description", "")),
            "",
            f"Samples are {scheme.get('sample_kind', '?')}s; an enrolment takes {count} of them.",
            "",
        ]
        rows = _property_rows(scheme.get("params_schema", {}))
        out.append(table(["parameter", "type", "required", "limits", "meaning"], rows))
    return "\n".join(out).strip()


# --------------------------------------------------------------------------------------------
# Settings


def _env_names_from_source(settings_cls: Any) -> dict[str, str]:
    """field -> SKETCHAUTH_* variable, read from the keyword arguments of ``from_env``."""
    source = inspect.getsource(settings_cls.from_env)
    tree = ast.parse(inspect.cleandoc("\n" + source) if source.startswith((" ", "\t")) else source)
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg:
            for const in ast.walk(node.value):
                if (
                    isinstance(const, ast.Constant)
                    and isinstance(const.value, str)
                    and const.value.startswith("SKETCHAUTH_")
                ):
                    names.setdefault(node.arg, const.value)
    return names


def _docstring_descriptions(module_doc: str, env_names: Iterable[str]) -> dict[str, str]:
    """SKETCHAUTH_* variable -> what the settings module docstring says about it.

    A bullet may describe one variable (``* ``VAR``: meaning``) or several (``* ``A`` (5),
    ``B`` (30): common meaning``); each variable gets its own parenthesis, unless it is only the
    default, followed by the bullet's text after the variable names.
    """
    bullets = [" ".join(b.split()) for b in re.split(r"\n\s*\*\s+", "\n" + module_doc)[1:]]
    found: dict[str, str] = {}
    for name in env_names:
        bullet = next((b for b in bullets if f"``{name}``" in b), None)
        bullet = bullet or next((b for b in bullets if name in b), None)
        if bullet is None:
            continue
        own = re.search(rf"``{name}``\s*(\(([^()]*)\))?", bullet)
        detail = own.group(2) if own and own.group(2) else ""
        head = re.match(r"(?:``SKETCHAUTH_\w+``(?:\s*\([^()]*\))?[,\s]*)+:?\s*", bullet)
        rest = bullet[head.end() :] if head else bullet
        if re.fullmatch(r"[\d.\s]*(MiB|s)?", detail):
            detail = ""
        found[name] = "; ".join(part for part in (detail, rest.rstrip(";.").strip()) if part)
    return found


def _field_comments(settings_cls: Any) -> dict[str, str]:
    """field -> its ``#:`` comment in the class body."""
    lines = inspect.getsource(settings_cls).splitlines()
    comments: dict[str, str] = {}
    pending: list[str] = []
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("#:"):
            pending.append(stripped[2:].strip())
            continue
        match = re.match(r"(\w+)\s*:", stripped)
        if match and pending:
            comments[match.group(1)] = " ".join(pending)
        pending = []
    return comments


def _serve_flags() -> dict[str, tuple[str, str]]:
    """``sketchauth serve`` flags and their help, by the field or variable they set.

    A flag belongs to a setting whose name is its destination, or whose environment variable its
    help text names (``default $SKETCHAUTH_DATABASE_URL``).
    """
    from sketchauth.cli import build_parser

    serve = _subparsers(build_parser()).get("serve")
    flags: dict[str, tuple[str, str]] = {}
    if serve is None:
        return flags
    for action in serve._actions:
        if not action.option_strings or action.dest == "help":
            continue
        entry = (max(action.option_strings, key=len), action.help or "")
        flags.setdefault(action.dest, entry)
        for env in re.findall(r"\$(SKETCHAUTH_\w+)", action.help or ""):
            flags.setdefault(env, entry)
    return flags


def _settings_rows_dataclass(settings_cls: Any) -> list[tuple[str, ...]]:
    import sys

    module = sys.modules[settings_cls.__module__]
    env_names = _env_names_from_source(settings_cls)
    described = _docstring_descriptions(module.__doc__ or "", env_names.values())
    comments = _field_comments(settings_cls)
    flags = _serve_flags()
    rows = []
    for field in dataclasses.fields(settings_cls):
        env = env_names.get(field.name)
        default = field.default if field.default is not dataclasses.MISSING else field.default_factory()  # type: ignore[misc]
        flag = flags.get(field.name) or (flags.get(env) if env else None)
        text = comments.get(field.name) or (described.get(env, "") if env else "") or (flag[1] if flag else "")
        text = text or field.name.replace("_", " ").capitalize()
        rows.append(
            (
                code(field.name),
                code(env) if env else "—",
                code(repr(default)),
                code(flag[0]) if flag else "—",
                prose(text),
            )
        )
    return rows


def _settings_rows_pydantic(settings_cls: Any) -> list[tuple[str, ...]]:
    config = getattr(settings_cls, "model_config", {}) or {}
    prefix = config.get("env_prefix", "")
    flags = _serve_flags()
    rows = []
    for name, field in settings_cls.model_fields.items():
        alias = field.validation_alias or field.alias
        env = alias if isinstance(alias, str) else f"{prefix}{name}".upper()
        default = field.get_default(call_default_factory=True)
        flag = flags.get(name) or flags.get(env)
        text = field.description or (flag[1] if flag else "")
        rows.append((code(name), code(env), code(repr(default)), code(flag[0]) if flag else "—", prose(text)))
    return rows


def render_settings() -> str:
    """The settings table, from the settings class itself."""
    settings_cls = _settings_class()
    if hasattr(settings_cls, "model_fields"):
        rows = _settings_rows_pydantic(settings_cls)
    elif dataclasses.is_dataclass(settings_cls):
        rows = _settings_rows_dataclass(settings_cls)
    else:
        raise TypeError(f"{settings_cls!r} is neither a dataclass nor a pydantic model")
    return table(["setting", "environment variable", "default", "`sketchauth serve` flag", "meaning"], rows)


# --------------------------------------------------------------------------------------------
# The command line


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _help_of(parser: argparse.ArgumentParser, name: str) -> str:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                if choice.dest == name:
                    return choice.help or ""
    return ""


def _option_rows(parser: argparse.ArgumentParser) -> list[tuple[str, str, str]]:
    rows = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        names = ", ".join(action.option_strings) or action.dest
        if action.metavar and action.option_strings:
            names += f" {action.metavar}"
        elif action.choices and action.option_strings:
            names += " {" + ",".join(map(str, action.choices)) + "}"
        required = " (required)" if action.required else ""
        rows.append(
            (
                code(names),
                prose(action.help or "") + required,
                code(action.default)
                if action.default not in (None, False) and action.default is not argparse.SUPPRESS
                else "",
            )
        )
    return rows


def _render_command(parser: argparse.ArgumentParser, words: list[str], help_text: str, level: int) -> list[str]:
    out = ["", "#" * level + " `" + " ".join(words) + "`", ""]
    description = parser.description or help_text
    if description:
        out += [prose(description), ""]
    children = _subparsers(parser)
    rows = _option_rows(parser)
    if rows:
        out.append(table(["option", "meaning", "default"], rows))
    if children:
        out += [
            "",
            table(
                ["command", "what it does"],
                [(code(" ".join([*words, c])), prose(_help_of(parser, c))) for c in children],
            ),
        ]
    for name, child in children.items():
        out += _render_command(child, [*words, name], _help_of(parser, name), min(level + 1, 6))
    return out


def render_cli() -> str:
    """Every ``sketchauth`` command and option, from the real parser."""
    from sketchauth.cli import build_parser

    parser = build_parser()
    return "\n".join(_render_command(parser, ["sketchauth"], parser.description or "", 3)).strip()


# --------------------------------------------------------------------------------------------
# Benchmarks

#: Top-level keys that say where and how a result was measured (shown first, as provenance).
_META_KEYS = (
    "date",
    "commit",
    "cpu",
    "machine",
    "python",
    "numpy",
    "platform",
    "command",
    "method",
    "load_average",
    "load_average_start",
    "load_average_end",
    "notes",
)
#: A list of records is one table when flattening its nested values gives at most this many columns.
_MAX_COLUMNS = 10


def _script_of(path: Path, data: Mapping[str, Any], scripts: Iterable[str]) -> str | None:
    named = data.get("benchmark") or data.get("script")
    if isinstance(named, str):
        stem = Path(named).stem
        if stem in scripts:
            return stem
    for stem in sorted(scripts, key=len, reverse=True):
        if path.stem == stem or path.stem.startswith(stem + "-") or path.stem.startswith(stem + "_"):
            return stem
    return None


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _number(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _describe(value: Any) -> str:
    """A short one-line reading of any JSON value (provenance cells)."""
    if _scalar(value):
        return _number(value)
    if isinstance(value, Mapping):
        return "; ".join(f"{k}: {_describe(v)}" for k, v in value.items())
    return ", ".join(_describe(v) for v in value)


def _flatten(record: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` → ``{"a.b": 1}``; lists of scalars stay values."""
    flat: dict[str, Any] = {}
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(_flatten(value, name + "."))
        else:
            flat[name] = value
    return flat


def _cells(row: Mapping[str, Any], columns: Iterable[str]) -> list[str]:
    return [_describe(row[c]) if c in row else "" for c in columns]


def _heading(level: int, text: str) -> str:
    return "#" * level + " " + text if level <= 5 else f"**{text}**"


def _is_matrix(value: Any) -> bool:
    """A mapping whose values are all mappings of plain values: one 2-D table."""
    return (
        isinstance(value, Mapping)
        and bool(value)
        and all(isinstance(v, Mapping) and v and all(_scalar(x) for x in v.values()) for v in value.values())
    )


def _matrix_table(value: Mapping[str, Mapping[str, Any]]) -> str:
    columns = list(dict.fromkeys(k for row in value.values() for k in row))
    return table(["", *map(cell, columns)], [[cell(name), *_cells(row, columns)] for name, row in value.items()])


def _render_records(name: str, records: list[Mapping[str, Any]], level: int) -> list[str]:
    """A list of records: one table if it stays narrow, else one section per record."""
    flat = [_flatten(r) for r in records]
    columns = list(dict.fromkeys(k for row in flat for k in row))
    out = ["", _heading(level, name.replace("_", " "))]
    if len(columns) <= _MAX_COLUMNS:
        return [*out, "", table(list(map(cell, columns)), [_cells(row, columns) for row in flat])]
    for record in records:
        label = ", ".join(f"{k} = {_describe(v)}" for k, v in record.items() if _scalar(v)) or "record"
        nested = {k: v for k, v in record.items() if not _scalar(v)}
        out += _render_value(label, nested, level + 1)
    return out


def _render_value(name: str, value: Any, level: int) -> list[str]:
    """Tables for records and matrices, key/value tables for flat mappings, recursion otherwise."""
    if isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
        return _render_records(name, value, level)
    out = ["", _heading(level, name.replace("_", " "))]
    if _is_matrix(value):
        return [*out, "", _matrix_table(value)]
    if isinstance(value, Mapping):
        flat = {k: v for k, v in value.items() if _scalar(v) or (isinstance(v, list) and all(map(_scalar, v)))}
        nested = {k: v for k, v in value.items() if k not in flat}
        if flat:
            out += ["", table(["measure", "value"], [(cell(k), _describe(v)) for k, v in flat.items()])]
        for key, sub in nested.items():
            out += _render_value(str(key), sub, level + 1)
        return out
    return [*out, "", _describe(value)]


def render_result(path: Path, data: Mapping[str, Any], level: int) -> list[str]:
    """One recorded run: its provenance, then its measurements."""
    meta = [(k, _describe(data[k])) for k in _META_KEYS if k in data]
    missing = [k for k in ("date", "commit", "cpu") if k not in data]
    out = ["", "#" * level + f" {path.name}", ""]
    if meta:
        out.append(table(["recorded", ""], [(k, v) for k, v in meta]))
    if missing:
        out += ["", '!!! warning "Incomplete provenance"', f"    This result does not record: {', '.join(missing)}."]
    for key, value in data.items():
        if key in _META_KEYS or key in ("benchmark", "script"):
            continue
        out += _render_value(str(key), value, level + 1)
    return out


def render_benchmarks(root: Path = ROOT) -> str:
    """Every recorded benchmark result, grouped by script; scripts without one say so."""
    scripts = {p.stem: p for p in sorted((root / "benchmarks").glob("bench_*.py"))}
    results: dict[str | None, list[tuple[Path, Mapping[str, Any]]]] = {}
    results_dir = root / "benchmarks" / "results"
    for path in sorted(results_dir.rglob("*.json")) if results_dir.is_dir() else []:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            log.warning("benchmarks: %s is not readable JSON (%s)", path.relative_to(root), exc)
            continue
        if not isinstance(data, Mapping):
            log.warning("benchmarks: %s is not a JSON object", path.relative_to(root))
            continue
        results.setdefault(_script_of(path, data, scripts), []).append((path, data))
    out: list[str] = []
    for stem, script in scripts.items():
        doc = (ast.get_docstring(ast.parse(script.read_text(encoding="utf-8"))) or "").split("\n\n")[0]
        out += ["", f"## `{script.name}`", "", prose(" ".join(doc.split())), ""]
        runs = sorted(results.get(stem, []), key=lambda r: str(r[1].get("date", "")), reverse=True)
        if not runs:
            run = f"python3 benchmarks/{script.name}"
            out.append(f"No results recorded. Run `{run}` and keep its JSON in `benchmarks/results/`.")
        for path, data in runs:
            out += render_result(path.relative_to(results_dir), data, 3)
    for path, data in results.get(None, []):
        out += ["", "## Other results"] if out[-1:] != ["## Other results"] else []
        out += render_result(path.relative_to(results_dir), data, 3)
    return "\n".join(out).strip()


# --------------------------------------------------------------------------------------------
# MkDocs events

GENERATORS: dict[str, Callable[[], str]] = {
    "openapi": lambda: render_openapi(openapi_document()),
    "settings": render_settings,
    "schemes": render_schemes,
    "cli": render_cli,
    "benchmarks": render_benchmarks,
}


def on_files(files: Files, config: Any) -> Files:
    """Publish the OpenAPI document beside the API page."""
    from mkdocs.structure.files import File

    try:
        content = json.dumps(openapi_document(), indent=2) + "\n"
    except Exception as exc:
        log.warning("generated openapi.json: %s: %s", type(exc).__name__, exc)
        return files
    files.append(File.generated(config, "service/openapi.json", content=content))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    """Check the hand-written text, then fill in the generated parts."""
    for number, line in enumerate(markdown.splitlines(), 1):
        if FORBIDDEN.search(line):
            log.warning(
                "%s:%d cites an internal document or tracker number: %s", page.file.src_uri, number, line.strip()
            )

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        generator = GENERATORS.get(name)
        if generator is None:
            log.warning("%s: unknown generated section %r", page.file.src_uri, name)
            return match.group(0)
        try:
            text = generator()
        except Exception as exc:
            log.warning("%s: generating %r failed: %s: %s", page.file.src_uri, name, type(exc).__name__, exc)
            return f'!!! failure "Not generated"\n    The {name} section could not be generated: {exc}'
        if CHECK_GENERATED:
            for line in text.splitlines():
                if FORBIDDEN.search(line):
                    log.warning(
                        "%s: generated %r cites an internal reference: %s", page.file.src_uri, name, line.strip()
                    )
        return text

    return MARKER.sub(fill, markdown)


def on_page_content(html: str, page: Any, config: Any, files: Files) -> str:
    """Check text rendered from docstrings (API reference pages) once :data:`CHECK_GENERATED` is on."""
    if CHECK_GENERATED and page.file.src_uri.startswith("reference/"):
        text = re.sub(r"<[^>]+>", " ", html)
        for match in FORBIDDEN.finditer(text):
            context = " ".join(text[max(0, match.start() - 60) : match.end() + 60].split())
            log.warning("%s: a docstring cites an internal reference: …%s…", page.file.src_uri, context)
    return html
