"""The entry schema: pydantic v2 models for one failure entry and the registries.

Takes plain data (from YAML) and returns frozen models, or pydantic errors that
`validate.py` maps back to file:line:col. Every field's docstring becomes its JSON
Schema description and a row of CONTRIBUTING.md's field guide.
"""

from __future__ import annotations

import difflib
import re
from functools import lru_cache
from enum import Enum
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

from .metrics import QUANTITIES

__all__ = [
    "SLUG_RE",
    "Category",
    "CodeExample",
    "DeadEnd",
    "Entry",
    "FaqItem",
    "Fingerprint",
    "Fix",
    "Language",
    "Platform",
    "Reference",
    "Reproduce",
    "Stack",
    "Strength",
    "Symptom",
    "Tag",
    "Verification",
    "Verify",
    "VersionRange",
    "entry_json_schema",
]

SLUG_RE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")

# Trojan-source characters: bidirectional controls and every other invisible format character
# (Unicode category Cf: zero-width ones, the soft hyphen, the tag characters that can smuggle hidden
# text), plus the fillers that render as nothing.
_INVISIBLE_RE = re.compile(
    "[\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160\u17b4\u17b5\u180e"
    "\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\u3164\ufeff\uffa0\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0001\U000e0020-\U000e007f]"
)
# C0/C1 control characters other than tab and newline; the line and paragraph separators; surrogates
# and non-characters (XML forbids them, so they would break the feed and the sitemap).
_NONCHARACTERS = "".join(chr(plane * 0x10000 + 0xFFFE) + chr(plane * 0x10000 + 0xFFFF) for plane in range(17))
_CONTROL_RE = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufdd0-\ufdef{_NONCHARACTERS}]")
_PLACEHOLDER_RE = re.compile(r"\bTODO\b|<fill in[^>]*>|\bFIXME\b")


_ASCII_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


@lru_cache(maxsize=4096)
def _odd_char(char: str) -> bool:
    return bool(_INVISIBLE_RE.match(char) or _CONTROL_RE.match(char))


def _suspect(value: str) -> bool:
    """A fast pre-check (the two big character classes are slow in `re`): ASCII text
    needs one small class; otherwise each distinct non-ASCII character is looked up once."""
    if "TODO" in value or "FIXME" in value or "<fill in" in value:
        return True
    if value.isascii():
        return _ASCII_CONTROL_RE.search(value) is not None
    return any(_odd_char(c) for c in set(value) if c < " " or c > "~")


def _clean_text(value: str) -> str:
    if not _suspect(value):  # the common, clean case
        return value
    bad = _INVISIBLE_RE.search(value)
    if bad:
        raise ValueError(
            f"contains the invisible character U+{ord(bad.group()):04X} at offset {bad.start()}; "
            "bidirectional and zero-width characters are not allowed (remove it)"
        )
    bad = _CONTROL_RE.search(value)
    if bad:
        raise ValueError(
            f"contains the control or non-text character U+{ord(bad.group()):04X} at offset {bad.start()}; remove it"
        )
    placeholder = _PLACEHOLDER_RE.search(value)
    if placeholder:
        raise ValueError(f"fill in this field: it still holds the placeholder {placeholder.group()!r}")
    return value


def _one_line(value: str) -> str:
    if "\n" in value.strip():
        raise ValueError("must be a single line")
    return value.strip()


def _slug(value: str) -> str:
    if not SLUG_RE.fullmatch(value):
        raise ValueError(
            f"{value!r} is not a valid slug: use lower-case letters, digits and single hyphens "
            "(e.g. 'nccl-watchdog-timeout')"
        )
    return value


Text = Annotated[str, StringConstraints(min_length=1, max_length=20_000), AfterValidator(_clean_text)]
"""Markdown or plain text of reasonable size."""
Line = Annotated[
    str,
    StringConstraints(min_length=1, max_length=300),
    AfterValidator(_clean_text),
    AfterValidator(_one_line),
]
Slug = Annotated[str, StringConstraints(max_length=80), AfterValidator(_slug)]
Url = Annotated[
    str,
    StringConstraints(max_length=2_000, pattern=r"^https?://[^\s/?#]+\.[^\s/?#]+[^\s]*$"),
    AfterValidator(_clean_text),
]
"""An absolute http(s) URL."""


class _Model(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        str_strip_whitespace=False,
        use_attribute_docstrings=True,
    )


class Stack(str, Enum):
    """The software stacks a code example can target."""

    pytorch = "pytorch"
    hf_trainer = "hf-trainer"
    accelerate = "accelerate"
    deepspeed = "deepspeed"
    megatron_lm = "megatron-lm"
    vllm = "vllm"
    lightning = "lightning"
    shell = "shell"


STACK_NAMES = {
    Stack.pytorch: "PyTorch",
    Stack.hf_trainer: "HF Trainer",
    Stack.accelerate: "Accelerate",
    Stack.deepspeed: "DeepSpeed",
    Stack.megatron_lm: "Megatron-LM",
    Stack.vllm: "vLLM",
    Stack.lightning: "Lightning",
    Stack.shell: "Shell",
}


class Language(str, Enum):
    """Languages a code block may be highlighted as."""

    python = "python"
    bash = "bash"
    yaml = "yaml"
    json = "json"
    toml = "toml"
    text = "text"


class Strength(str, Enum):
    """How much one fingerprint hit says about the failure.

    definitive: the line alone names this failure (e.g. "Duplicate GPU detected").
    strong: the line points at this failure, but a look-alike may print it too.
    supporting: common text that only counts together with other hits.
    """

    definitive = "definitive"
    strong = "strong"
    supporting = "supporting"


STRENGTH_SCORE = {Strength.definitive: 10, Strength.strong: 6, Strength.supporting: 2}


def _known_quantity(name: str) -> str:
    if name not in QUANTITIES:
        close = difflib.get_close_matches(name, QUANTITIES, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"unknown quantity {name!r}{hint}; use one of: {', '.join(QUANTITIES)}")
    return name


# A quantity training logs print, read from any log format (generator/core/metrics.py).
Quantity = Annotated[str, AfterValidator(_known_quantity), Field(json_schema_extra={"enum": list(QUANTITIES)})]


class Fingerprint(_Model):
    """Error text a real log shows for this failure; matched by `failpedia diagnose`."""

    pattern: Annotated[str, StringConstraints(min_length=4, max_length=500), AfterValidator(_clean_text)] | None = None
    """The error text as a regular expression (required unless `metric` is given), from the portable
    subset (see CONTRIBUTING.md): literals, escapes such as
    `\\d \\w \\s \\b \\.`, classes `[...]`, groups `(...)`/`(?:...)`, `|`, and the quantifiers
    `? * + {m,n}`. No lookaround, backreferences, named groups or inline flags; no quantified group that
    contains another quantifier. Matched against one log line at a time, case-sensitively."""
    metric: Quantity | None = None
    """Instead of a pattern, for failures whose sign is a number: the quantity to read, in whatever
    format the log prints it (loss, grad_norm, loss_scale, learning_rate, step_time, data_time,
    memory_allocated, memory_reserved, throughput); use it with rising, share_above, falls_to or
    nonfinite."""
    near: Annotated[str, StringConstraints(min_length=2, max_length=500), AfterValidator(_clean_text)] | None = None
    """Optional second regex (same subset): the hit only counts when a line within `window` lines
    before or after it matches this too (e.g. `allreduce|Reducer` near a CUDA OOM)."""
    window: Annotated[int, Field(ge=1, le=200)] = 40
    """How many lines before and after the hit `near` may be found in."""
    strength: Strength = Strength.strong
    """definitive, strong or supporting: how much one hit says on its own."""
    rising: bool = False
    """Fires once the number (the metric's reading, or the pattern's first group) has risen on
    `times` readings in a row (e.g. allocated memory that grows every step)."""
    share_above: Annotated[float, Field(gt=0, le=1)] | None = None
    """Fires once the metric is at least this share of the `of` quantity on the same line, on `times`
    lines (e.g. data_time of step_time). With a pattern: its first group captures the whole, the
    second the part."""
    of: Quantity | None = None
    """The whole that `share_above` divides the metric by (e.g. step_time)."""
    falls_to: Annotated[float, Field(ge=0)] | None = None
    """Fires once the metric has fallen on `times` readings and reads at most this (e.g. a loss
    scale halved again and again down to 1)."""
    nonfinite: bool = False
    """Fires when the metric reads nan or inf after a finite reading (e.g. a loss that turns nan)."""
    times: Annotated[int, Field(ge=2, le=100)] | None = None
    """How many readings rising, share_above or falls_to need (default 5)."""
    examples: Annotated[list[Line], Field(min_length=1, max_length=10)]
    """Real log lines that `pattern` must match, or that the metric must be read from (checked by
    `failpedia check`); copy them from a real log or the source that prints them."""


class Symptom(_Model):
    """One thing you see, and why this failure produces it."""

    signal: Line
    """What you observe (a log line, a metric, a behaviour)."""
    why: Text
    """Why this failure produces that signal."""


class CodeExample(_Model):
    """A code example for one stack."""

    stack: Stack
    """Which stack this example is for."""
    language: Language
    """How to highlight the code."""
    code: Annotated[str, StringConstraints(min_length=1, max_length=10_000), AfterValidator(_clean_text)]
    """The code. Python snippets must compile."""
    caption: Line | None = None
    """Optional one-line explanation shown above the code."""


class Verify(_Model):
    """How to check that the fix worked."""

    language: Language
    """How to highlight the command or snippet."""
    code: Annotated[str, StringConstraints(min_length=1, max_length=5_000), AfterValidator(_clean_text)]
    """A command or snippet to run."""
    expect: Text
    """What it should show when the fix worked."""


class Fix(_Model):
    """The recommended fix."""

    summary: Line
    """The one-line recommendation shown at the top of the page."""
    steps: Annotated[list[Text], Field(min_length=1, max_length=30)]
    """Ordered steps (markdown)."""
    code: Annotated[list[CodeExample], Field(max_length=20)] = []
    """Code examples, one per stack where it applies."""
    verify: Verify
    """How to confirm that the fix worked."""


class Platform(str, Enum):
    """What a reproduction needs to run."""

    cpu = "cpu"
    cuda = "cuda"
    multi_gpu = "multi-gpu"


Requirement = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,60}(\[[A-Za-z0-9,._-]+\])?\s*([\x3c\x3e=!~]=?[^\s,;]+\s*(,\s*[\x3c\x3e=!~]=?[^\s,;]+\s*)*)?$")]
"""A pip requirement specifier: a package name and an optional version range, as pip writes them."""


class Reproduce(_Model):
    """A short script that makes this failure happen, run only by `failpedia verify` (in a subprocess,
    a scratch folder and a minimal environment; never by check, build or serve)."""

    platform: Platform = Platform.cpu
    """cpu, cuda or multi-gpu: what the script needs. Only cpu reproductions run on an ordinary machine."""
    packages: Annotated[list[Requirement], Field(max_length=20)] = []
    """Packages the script imports, as pip requirement specifiers with a pinned range (at least one release, below the next major)."""
    script: Annotated[str, StringConstraints(min_length=1, max_length=20_000), AfterValidator(_clean_text)]
    """The Python script. It should fail the way a real run does, printing the error text."""
    matches: Annotated[list[Annotated[int, Field(ge=0, le=19)]], Field(min_length=1, max_length=20)]
    """Indexes (from 0) of the fingerprints that the script's output must match."""
    timeout: Annotated[int, Field(ge=1, le=1800)] = 300
    """Seconds the script may run."""


class Verification(_Model):
    """What `failpedia verify` ran and saw for one entry's reproduction: one item of
    `entries/verified.yaml`. Written by the tool, not by hand; the entry page shows it."""

    result: Annotated[str, StringConstraints(pattern=r"^(reproduced|not-reproduced)$")]
    """reproduced: every fingerprint in `reproduce.matches` matched the script's output; not-reproduced: not so."""
    date: Annotated[str, StringConstraints(pattern=r"^\d{4}-\d{2}-\d{2}$")]
    """The day of the run (UTC), YYYY-MM-DD."""
    platform: Platform
    """What it ran on: cpu, cuda or multi-gpu."""
    python: Annotated[str, StringConstraints(pattern=r"^\d+\.\d+\.\d+[0-9A-Za-z.+-]{0,20}$")]
    """The Python version the script ran under."""
    packages: Annotated[dict[Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,60}$")],
                             Annotated[str, StringConstraints(pattern=r"^[0-9A-Za-z][0-9A-Za-z.+!_-]{0,40}$")]], Field(max_length=20)] = {}
    """The version installed of each package the reproduction names."""
    expected: Annotated[list[Annotated[int, Field(ge=0, le=19)]], Field(max_length=20)] = []
    """The fingerprints it had to match (`reproduce.matches`)."""
    matched: Annotated[list[Annotated[int, Field(ge=0, le=19)]], Field(max_length=20)] = []
    """The fingerprints that matched its output."""
    reason: Line | None = None
    """Why it did not reproduce (a fingerprint that did not match, a time-out, an exit code)."""
    reproduce: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
    """The digest of the reproduce section and its fingerprints at the run: a record of an
    earlier version of them is not shown."""


class FaqItem(_Model):
    """A question people really ask about this failure, and its answer."""

    q: Line
    """The question."""
    a: Text
    """The answer (markdown), specific to this failure."""


class VersionRange(_Model):
    """Versions of a package affected by this failure, OSV-style."""

    package: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,60}$")]
    """Package name, e.g. `torch`, `deepspeed`, `nccl`."""
    introduced: Annotated[str, StringConstraints(pattern=r"^[0-9][0-9A-Za-z.+-]{0,30}$")] | None = None
    """First affected version; omit when it has always been so."""
    fixed: Annotated[str, StringConstraints(pattern=r"^[0-9][0-9A-Za-z.+-]{0,30}$")] | None = None
    """First version with the fix; omit when not fixed."""
    note: Line | None = None
    """Optional one-line note (e.g. "default changed to weights_only=True")."""


class DeadEnd(_Model):
    """A fix people try that does not help with this failure."""

    attempt: Line
    """What people try."""
    why: Text
    """Why it does not help here."""


class Reference(_Model):
    """An authoritative source: official docs, source code or an issue thread."""

    title: Line
    """What the link is, e.g. "DistributedDataParallel (PyTorch docs)"."""
    url: Url
    """An http(s) URL."""


class Entry(_Model):
    """One failure: what it looks like, why it happens, and how to fix it."""

    title: Line
    """The failure's name, as an engineer would search for it."""
    summary: Annotated[str, StringConstraints(min_length=20, max_length=600), AfterValidator(_clean_text)]
    """The quick answer, plain text: the cause and the fix in one or two sentences."""
    tags: Annotated[list[Annotated[str, StringConstraints(min_length=1, max_length=40), AfterValidator(_clean_text), AfterValidator(_one_line)]], Field(min_length=1, max_length=12)]
    """Tags from `entries/tags.yaml` (names or aliases)."""
    fingerprints: Annotated[list[Fingerprint], Field(max_length=20)] = []
    """Error text that identifies this failure in a log."""
    symptoms: Annotated[list[Symptom], Field(min_length=1, max_length=30)]
    """Signals and why each happens."""
    observe: Annotated[list[Text], Field(min_length=1, max_length=30)]
    """What you'll observe, in order: what the run does as it fails (markdown items)."""
    mechanism: Text
    """Why it happens (markdown): what allocates what, which process waits for which."""
    affected: Annotated[list[Text], Field(min_length=1, max_length=30)]
    """Systems and configurations that hit this failure."""
    confirm: Annotated[list[Text], Field(min_length=1, max_length=30)]
    """A checklist that confirms the diagnosis."""
    fix: Fix
    """The recommended fix."""
    prevention: Annotated[list[Text], Field(min_length=1, max_length=30)]
    """How to keep it from happening again."""
    faq: Annotated[list[FaqItem], Field(max_length=40)] = []
    """Questions and answers specific to this failure."""
    versions: Annotated[list[VersionRange], Field(max_length=20)] = []
    """Affected versions per package, where known."""
    dead_ends: Annotated[list[DeadEnd], Field(max_length=20)] = []
    """Fixes that people try that do not help here, and why."""
    related: Annotated[list[Slug], Field(max_length=30)] = []
    """Slugs of related entries."""
    often_causes: Annotated[list[Slug], Field(max_length=20)] = []
    """Slugs of failures this one triggers downstream (e.g. on other ranks)."""
    references: Annotated[list[Reference], Field(min_length=1, max_length=40)]
    """Sources for the facts on the page."""
    reproduce: Reproduce | None = None
    """Optional: a script that reproduces the failure, checked by `failpedia verify`."""


class Tag(_Model):
    """One tag in `entries/tags.yaml`."""

    name: Annotated[str, StringConstraints(max_length=40), AfterValidator(_slug)]
    """The canonical spelling: lower-case letters, digits, hyphens."""
    description: Annotated[str, StringConstraints(min_length=10, max_length=2_000), AfterValidator(_clean_text)]
    """One paragraph shown on the tag page."""
    aliases: Annotated[list[Annotated[str, StringConstraints(max_length=40), AfterValidator(_slug)]], Field(max_length=20)] = []
    """Other spellings that resolve to this tag."""


class Category(_Model):
    """One category in `entries/categories.yaml`; entries live in `entries/<name>/`."""

    name: Annotated[str, StringConstraints(max_length=40), AfterValidator(_slug)]
    """The folder name."""
    title: Line
    """The display name."""
    description: Annotated[str, StringConstraints(min_length=10, max_length=2_000), AfterValidator(_clean_text)]
    """One paragraph shown on the category page."""


class SynonymGroup(_Model):
    """One group in `entries/synonyms.yaml`: spellings search treats as one (words, phrases or
    identifiers), e.g. `[oom, out of memory]`."""

    words: Annotated[list[Annotated[str, StringConstraints(min_length=1, max_length=80), AfterValidator(_clean_text), AfterValidator(_one_line)]], Field(min_length=2, max_length=30)]
    """The spellings; the first names the group."""


def entry_json_schema() -> dict[str, Any]:
    """The JSON Schema of one entry file, for editors and `/schema/entry.json`."""
    schema = Entry.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "entry.json"
    return schema
