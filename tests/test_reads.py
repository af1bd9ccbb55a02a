"""Page keys are made of what pages looked up (generator/site/reads.py). A rebuild skips valuing
the look-ups of a page none of whose subjects changed, so this must hold for every look-up: equal
signatures of its subject, equal values. Checked on a generated corpus of 80 entries before and
after edits that move other entries' similar lists, backlinks, titles, dates and a category."""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

import yaml

from generator.core.config import Config
from generator.site.build import load_catalog
from generator.site.pages import plan_pages
from generator.site.reads import Read, Reader, stale_subjects, subject

REPO = Path(__file__).resolve().parent.parent


def _make_corpus(out: Path, count: int) -> None:
    spec = importlib.util.spec_from_file_location("bench_corpus", REPO / "bench" / "corpus.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.make_corpus(REPO / "entries", count, out)


def _reader(entries: Path, dates: dict[str, str]) -> tuple[Reader, set[Read]]:
    catalog = load_catalog(entries)
    contents = {rec.path: hashlib.sha256(Path(rec.path).read_bytes()).hexdigest() for rec in catalog.records.values()}
    plan = plan_pages(catalog, Config(base_url="https://example.org/"), dates, contents=contents)
    reads: set[Read] = set()
    for page in plan.pages:
        if page.reads_catalog:
            reads.update(page.made(plan.reader)[1])
    return plan.reader, reads


def _edit(path: Path, change) -> None:
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))


def test_a_look_up_whose_subject_kept_its_signature_kept_its_value(tmp_path: Path) -> None:
    entries = tmp_path / "entries"
    _make_corpus(entries, 80)
    files = sorted(entries.glob("*/*.yaml"))
    slugs = [f.stem for f in files]
    dates_before = {f"{f.parent.name}/{f.name}": f"2026-11-{1 + i % 28:02d}" for i, f in enumerate(files)}
    dates_after = {**dates_before, f"{files[3].parent.name}/{files[3].name}": "2026-12-06"}
    before, reads_before = _reader(entries, dates_before)

    _edit(files[0], lambda d: d.update(tags=list(reversed(d["tags"]))[:1]))  # moves other entries' similar lists
    _edit(files[1], lambda d: d.update(title="A title edited for the test"))
    _edit(files[2], lambda d: d.update(related=[s for s in slugs[5:8] if s != files[2].stem]))  # others' backlinks
    renamed = files[4].parent.name  # a category some entry pages show

    def retitle(d: dict) -> None:
        for c in d["categories"]:
            if c["name"] == renamed:
                c["title"] += " (renamed)"
    _edit(entries / "categories.yaml", retitle)
    after, reads_after = _reader(entries, dates_after)
    stale = stale_subjects(before.signatures(), after.signatures())  # what a rebuild values again

    kept = moved = 0
    for read in sorted(reads_before | reads_after):
        if subject(read) not in stale:
            kept += 1
            assert before.value(read) == after.value(read), read
        elif before.value(read) != after.value(read):
            moved += 1
    # the edits moved look-ups about entries that were not edited (similar lists, backlinks, a date)
    edited = {files[0].stem, files[1].stem, files[2].stem}
    assert any(r[0] in ("similar", "backlinks", "date", "card") and r[1] not in edited and before.value(r) != after.value(r)
               for r in reads_before), "the edits moved nothing beyond the edited entries: the test would prove nothing"
    assert kept > 300 and moved > 10, (kept, moved)
    assert before.value(("category", renamed)) != after.value(("category", renamed))
