"""Scaffold: a slug, a category and tags → a new entry file with every field in place.

`scaffold_text()` is pure: it returns the YAML of a new entry whose comments are the schema's
field docstrings (first sentence) and whose values are `<fill in ...>` placeholders that
`failpedia check` refuses until they are replaced. `field_guide()` renders the same docstrings
as CONTRIBUTING.md's field-by-field tables, so neither can drift from `schema.py`.
`create_entry` writes one (the `failpedia new` command is commands/new.py).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ..core.catalog import RESERVED_SLUGS, normalize_tag
from ..core.problems import FailpediaError, SetupError, UsageError
from ..core.schema import (
    SLUG_RE,
    CodeExample,
    DeadEnd,
    Entry,
    FaqItem,
    Fingerprint,
    Fix,
    Language,
    Reference,
    Reproduce,
    Stack,
    Symptom,
    Verify,
    VersionRange,
    entry_json_schema,
)
from ..core.validate import parse_categories, parse_tags, suggest

__all__ = ["GUIDE_MODELS", "SCHEMA_FILE", "create_entry", "field_guide", "placeholders", "scaffold_text", "schema_ref"]

MAX_SLUG = 80
MAX_TAGS = 12
SCHEMA_FILE = Path("schema") / "entry.json"  # relative to the project; kept equal to `failpedia schema`
TAG_PLACEHOLDER = "<fill in a tag from tags.yaml>"

# Every model an entry is made of, in the order the guide shows them.
GUIDE_MODELS: tuple[type[BaseModel], ...] = (
    Entry, Fingerprint, Symptom, Fix, CodeExample, Verify, FaqItem, VersionRange, DeadEnd, Reference, Reproduce,
)

# The new entry. `{doc:Model.field}` becomes the first sentence of that field's docstring.
# Placeholders are plain YAML scalars: no ': ', no ' #', no '>' inside, none starts with an indicator.
_TEMPLATE = """\
# yaml-language-server: $schema={schema}
# A new Failpedia entry. Replace every <fill in ...> placeholder and the TODO link, delete the
# optional items you have nothing for, then run `failpedia check`. Guide: CONTRIBUTING.md.

# {doc:Entry.title}
title: <fill in the name of the failure, as an engineer would search for it>
# {doc:Entry.summary}
summary: >-
  <fill in the quick answer - the cause and the fix in one or two sentences>
# {doc:Entry.tags}
tags:
{tags}
# {doc:Entry.fingerprints} Optional: delete the list item if the log shows nothing distinctive.
fingerprints:
  # {doc:Fingerprint.pattern}
  - pattern: '<fill in a regex that matches the example lines>'
    # {doc:Fingerprint.near} Optional.
    # near: 'allreduce|Reducer'
    # {doc:Fingerprint.window} Optional, default 40.
    # window: 40
    # {doc:Fingerprint.strength}
    strength: strong
    # {doc:Fingerprint.examples}
    examples:
      - '<fill in a line copied from a real log>'
  # Or, when the sign is a number: {doc:Fingerprint.metric}
  # - metric: grad_norm
    # {doc:Fingerprint.rising} Optional.
    # rising: true
    # {doc:Fingerprint.share_above} Optional.
    # share_above: 0.5
    # {doc:Fingerprint.of} Optional.
    # of: step_time
    # {doc:Fingerprint.falls_to} Optional.
    # falls_to: 1
    # {doc:Fingerprint.nonfinite} Optional.
    # nonfinite: true
    # {doc:Fingerprint.times} Optional, default 5.
    # times: 10
    # strength: strong
    # examples:
    #   - ' iteration 1210/ 300000 | lm loss: 4.131107E+00 | loss scale: 1.0 | grad norm: 118.302 |'
# {doc:Entry.symptoms}
symptoms:
  # {doc:Symptom.signal}
  - signal: <fill in what you observe - a log line, a metric or a behaviour>
    # {doc:Symptom.why}
    why: <fill in why this failure produces that signal>
# {doc:Entry.observe}
observe:
  - <fill in what the run does first as it fails>
# {doc:Entry.mechanism}
mechanism: |
  <fill in why it happens, in markdown - what allocates what, which process waits for which>
# {doc:Entry.affected}
affected:
  - <fill in a system or configuration that hits this failure>
# {doc:Entry.confirm}
confirm:
  - <fill in a check that confirms the diagnosis>
# {doc:Entry.fix}
fix:
  # {doc:Fix.summary}
  summary: <fill in the one-line recommendation>
  # {doc:Fix.steps}
  steps:
    - <fill in the first step>
  # {doc:Fix.code} Optional: delete the list item if no code applies.
  code:
    # {doc:CodeExample.stack} One of: {stacks}.
    - stack: pytorch
      # {doc:CodeExample.language} One of: {languages}.
      language: python
      # {doc:CodeExample.code}
      code: |
        <fill in the code>
      # {doc:CodeExample.caption}
      # caption: With bucket_cap_mb=10 each bucket holds at most 10 MiB of gradients
  # {doc:Fix.verify}
  verify:
    # {doc:Verify.language} One of: {languages}.
    language: bash
    # {doc:Verify.code}
    code: |
      <fill in a command or snippet to run>
    # {doc:Verify.expect}
    expect: <fill in what it shows when the fix worked>
# {doc:Entry.prevention}
prevention:
  - <fill in how to keep it from happening again>
# {doc:Entry.faq} Optional: delete the list item if you have none.
faq:
  # {doc:FaqItem.q}
  - q: <fill in a question people really ask about this failure>
    # {doc:FaqItem.a}
    a: <fill in the answer>
# {doc:Entry.versions} Optional; to add one, replace [] with items like these:
#   - package: torch   # {doc:VersionRange.package}
#     introduced: '2.0'   # {doc:VersionRange.introduced}
#     fixed: '2.1'   # {doc:VersionRange.fixed}
#     note: default changed   # {doc:VersionRange.note}
versions: []
# {doc:Entry.dead_ends} Optional: delete the list item if you have none.
dead_ends:
  # {doc:DeadEnd.attempt}
  - attempt: <fill in a fix people try that does not help>
    # {doc:DeadEnd.why}
    why: <fill in why it does not help here>
# {doc:Entry.related} For example [cuda-out-of-memory]; add this slug to their related too.
related: []
# {doc:Entry.often_causes} Optional.
often_causes: []
# {doc:Entry.references}
references:
  # {doc:Reference.title}
  - title: <fill in what the link is, e.g. DistributedDataParallel (PyTorch docs)>
    # {doc:Reference.url}
    url: https://example.com/TODO-paste-the-source-url
# {doc:Entry.reproduce} To add one, uncomment and fill in:
# reproduce:
#   platform: cpu   # {doc:Reproduce.platform}
#   packages: ['torch>=2.6,<3']   # {doc:Reproduce.packages}
#   matches: [0]   # {doc:Reproduce.matches}
#   timeout: 300   # {doc:Reproduce.timeout}
#   script: |   # {doc:Reproduce.script}
#     import torch
"""

_MODELS = {m.__name__: m for m in GUIDE_MODELS}
_FIELD_RE = re.compile(r"\{doc:(\w+)\.(\w+)\}")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_PLACEHOLDER_RE = re.compile(r"<fill in[^>]*>|\bTODO\b")


def _doc(model: type[BaseModel], field: str) -> str:
    """A field's docstring on one line."""
    description = model.model_fields[field].description
    if not description:
        raise FailpediaError(f"{model.__name__}.{field} has no docstring; document it in generator/core/schema.py")
    return " ".join(description.split())


def _first_sentence(text: str) -> str:
    return _SENTENCE_END.split(text, maxsplit=1)[0]


def _doc_comment(match: re.Match[str]) -> str:
    return _first_sentence(_doc(_MODELS[match.group(1)], match.group(2)))


def scaffold_text(tags: Sequence[str], schema: str) -> str:
    """The YAML of a new entry: every field, a comment on each, placeholders to fill in."""
    tag_lines = "\n".join(f"  - {t}" for t in tags) if tags else f"  - {TAG_PLACEHOLDER}"
    text = _FIELD_RE.sub(_doc_comment, _TEMPLATE)
    values = {
        "schema": schema,
        "tags": tag_lines,
        "stacks": ", ".join(s.value for s in Stack),
        "languages": ", ".join(lang.value for lang in Language),
    }
    return re.sub(r"\{(schema|tags|stacks|languages)\}", lambda m: values[m.group(1)], text)


def schema_ref(project: Path, entry_dir: Path, base_url: str) -> str:
    """Where the new file's `$schema` points: the project's committed schema file, relative to the
    entry, or the published one when the entries live outside the project or it has no schema file."""
    local, project, entry_dir = (project / SCHEMA_FILE).resolve(), project.resolve(), entry_dir.resolve()
    if local.is_file() and project in entry_dir.parents:
        return Path(os.path.relpath(local, entry_dir)).as_posix()
    return f"{base_url}schema/entry.json"


def _registry(root: Path, name: str) -> tuple[str, bytes]:
    path = root / name
    try:
        return str(path), path.read_bytes()
    except FileNotFoundError:
        raise FailpediaError(f"{path}: not found; is {root} the entries folder? (pass --entries DIR)") from None
    except OSError as e:
        raise FailpediaError(f"{path}: cannot read: {e.strerror}") from None


def _check_slug(root: Path, slug: str) -> None:
    if not SLUG_RE.fullmatch(slug):
        better = "-".join(re.findall(r"[a-z0-9]+", slug.lower()))
        hint = f"; try '{better}'" if better and better != slug and len(better) <= MAX_SLUG else ""
        raise UsageError(f"'{slug}' is not a valid slug: use lower-case letters, digits and single hyphens{hint}")
    if len(slug) > MAX_SLUG:
        raise UsageError(f"slug '{slug}' is {len(slug)} characters long; keep it to {MAX_SLUG}")
    if slug in RESERVED_SLUGS:
        raise UsageError(f"slug '{slug}' is reserved for a site section; choose a more specific name")
    existing = sorted(p for ext in ("yaml", "yml") for p in root.glob(f"*/{slug}.{ext}"))
    if existing:
        raise UsageError(f"an entry with the slug '{slug}' already exists: {existing[0]}; edit it, or choose another slug")


def _check_category(root: Path, category: str) -> None:
    path, raw = _registry(root, "categories.yaml")
    items, problems = parse_categories(raw, path)
    if problems:
        raise FailpediaError(f"{path} has errors; run 'failpedia check' to see them")
    names = [c.name for c, _ in items]
    if category not in names:
        raise UsageError(f"unknown category '{category}'{suggest(category, names)} (categories: {', '.join(names)}; listed in {path})")


def _resolve_tags(root: Path, spellings: Sequence[str]) -> list[str]:
    if not spellings:
        return []
    path, raw = _registry(root, "tags.yaml")
    items, problems = parse_tags(raw, path)
    if problems:
        raise FailpediaError(f"{path} has errors; run 'failpedia check' to see them")
    aliases = {spelling: tag.name for tag, _ in items for spelling in (tag.name, *tag.aliases)}
    out: list[str] = []
    for spelling in spellings:
        name = aliases.get(normalize_tag(spelling))
        if name is None:
            raise UsageError(f"unknown tag '{spelling}'{suggest(normalize_tag(spelling), set(aliases))} (tags are listed in {path})")
        if name not in out:
            out.append(name)
    if len(out) > MAX_TAGS:
        raise UsageError(f"{len(out)} tags given; an entry has at most {MAX_TAGS}")
    return out


def create_entry(root: Path, slug: str, category: str, tags: Sequence[str], project: Path, base_url: str) -> Path:
    """Write `root/<category>/<slug>.yaml` from the scaffold; refuses bad or taken slugs, unknown
    categories and unknown tags with a UsageError. Returns the new file's path."""
    if not root.is_dir():
        raise SetupError(f"{root}: entries folder not found; pass --entries DIR")
    _check_slug(root, slug)
    _check_category(root, category)
    names = _resolve_tags(root, tags)
    folder = root / category
    folder.mkdir(exist_ok=True)
    path = folder / f"{slug}.yaml"
    text = scaffold_text(names, schema_ref(project, folder, base_url))
    try:
        with open(path, "x", encoding="utf-8") as f:
            f.write(text)
    except FileExistsError:
        raise UsageError(f"{path} already exists; edit it, or choose another slug") from None
    return path


def placeholders(text: str) -> int:
    """The placeholders still to fill in an entry's YAML (comment lines left out)."""
    values = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    return sum(len(_PLACEHOLDER_RE.findall(line)) for line in values)


# --- the field guide (CONTRIBUTING.md) ----------------------------------------------------------


def _describe(prop: dict[str, Any], defs: dict[str, Any]) -> str:
    """A JSON Schema property → a short human type, e.g. 'list of [Symptom](#symptom), 1–30'."""
    if "anyOf" in prop:
        kinds = [p for p in prop["anyOf"] if p.get("type") != "null"]
        return _describe(kinds[0], defs) if len(kinds) == 1 else "one of several forms"
    if "$ref" in prop:
        name = prop["$ref"].rsplit("/", 1)[-1]
        target = defs[name]
        if "enum" in target:
            return "one of " + ", ".join(f"`{v}`" for v in target["enum"])
        return f"[{name}](#{name.lower()})"
    if "enum" in prop:
        return "one of " + ", ".join(f"`{v}`" for v in prop["enum"])
    kind = prop.get("type")
    if kind == "array":
        lo, hi = prop.get("minItems", 0), prop.get("maxItems")
        count = f"{lo}–{hi}" if hi is not None else f"at least {lo}"
        return f"list of {_describe(prop['items'], defs)}, {count}"
    if kind in ("integer", "number"):
        low = f"above {prop['exclusiveMinimum']}" if "exclusiveMinimum" in prop else f"from {prop.get('minimum', '')}"
        high = f" to {prop['maximum']}" if "maximum" in prop else " or more"
        return f"{'whole ' * (kind == 'integer')}number {low}{high}".replace("from  to ", "")
    if kind == "boolean":
        return "`true` or `false`"
    if kind == "string":
        if prop.get("pattern", "").startswith("^https?://"):
            return "http(s) URL"
        if "pattern" in prop or prop.get("maxLength", 10**9) <= 80:
            return "short text"
        return "one line" if prop["maxLength"] <= 300 else "text"
    return str(kind)


def field_guide() -> str:
    """CONTRIBUTING.md's field tables: every field of every entry model, from the docstrings."""
    schema = entry_json_schema()
    defs = schema.get("$defs", {})
    out: list[str] = []
    for model in GUIDE_MODELS:
        props = schema["properties"] if model is Entry else defs[model.__name__]["properties"]
        doc = " ".join((model.__doc__ or "").split())
        out += [f"#### {model.__name__}", "", doc, "", "| field | required | type | what to write |", "| --- | --- | --- | --- |"]
        for name, info in model.model_fields.items():
            if info.is_required():
                required = "yes"
            else:
                default = info.get_default(call_default_factory=True)
                required = "no" if default in (None, []) else f"no (default `{json.dumps(getattr(default, 'value', default))}`)"
            text = _doc(model, name).replace("|", "\\|")
            out.append(f"| `{name}` | {required} | {_describe(props[name], defs)} | {text} |")
        out.append("")
    return "\n".join(out)
