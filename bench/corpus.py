"""Make a synthetic corpus of N valid entries by cloning and perturbing the real ones.

    python bench/corpus.py --from entries --count 10000 --out /tmp/corpus

The output is laid out like entries/ (registries included), so `failpedia build --entries DIR`
builds it. Slugs are unique, tags follow a Zipf-like skew (a few tags on most entries, a long
tail on few), related links point at other generated entries, and every entry is valid.
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from generator.core.prose import XREF_RE  # noqa: E402
from generator.core.schema import Entry  # noqa: E402

SUMMARY_MAX = next(m.max_length for m in Entry.model_fields["summary"].metadata if getattr(m, "max_length", None))
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _load(path: Path) -> dict:
    return yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)


def _unique(fingerprint: dict, i: int, k: int) -> dict:
    """A clone's fingerprint with patterns of its own, as a real corpus has: a real one has 164
    distinct patterns in 167, and repeated strings would let every per-pattern cache (re's own,
    the literal covers) answer for the clones. An alternative that no example contains keeps
    what the pattern matches, its groups and its safety."""
    out = dict(fingerprint)
    for name in ("pattern", "near"):
        if out.get(name):
            out[name] = f"(?:{out[name]}|synthetic fingerprint {i} {k})"
    return out


def make_corpus(source: Path, count: int, out: Path, seed: int = 1) -> int:
    rnd = random.Random(seed)
    seeds = []
    for path in sorted(source.glob("*/*.yaml")):
        seeds.append((path.parent.name, path.stem, _load(path)))
    if not seeds:
        raise SystemExit(f"{source}: no entries found")
    tags = [t["name"] for t in _load(source / "tags.yaml")["tags"]]
    # Zipf-like weights: the k-th tag is picked with weight 1/k.
    order = tags[:]
    rnd.shuffle(order)
    weights = [1 / (k + 1) for k in range(len(order))]

    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    shutil.copy(source / "tags.yaml", out / "tags.yaml")
    shutil.copy(source / "categories.yaml", out / "categories.yaml")

    plan = []
    for i in range(count):
        category, slug, data = seeds[i % len(seeds)]
        plan.append((category, f"{slug}-{i:06d}" if count > len(seeds) or i >= len(seeds) else slug, data))
    slugs = [s for _, s, _ in plan]
    # `[[slug]]` in a seed's text names another seed: point it at that seed's first clone, or
    # write the slug as plain text when the corpus is too small to hold one.
    first_clone = {seed: slugs[k] if k < count else None for k, (_, seed, _) in enumerate(seeds)}

    def _relinked(m: re.Match[str]) -> str:
        if m[1] not in first_clone:  # not an entry's name (e.g. Docker's `[[gpu]]` in a log line)
            return m[0]
        clone = first_clone[m[1]]
        return f"[[{clone}]]" if clone else m[1]

    def relink(value: object) -> object:
        if isinstance(value, str):
            return XREF_RE.sub(_relinked, value)
        if isinstance(value, list):
            return [relink(v) for v in value]
        if isinstance(value, dict):
            return {k: relink(v) for k, v in value.items()}
        return value

    for i, (category, slug, data) in enumerate(plan):
        entry = relink(data)
        assert isinstance(entry, dict)
        entry["title"] = f"{data['title']} (case {i})"
        suffix = f" Seen in synthetic case {i}."
        if len(entry["summary"]) + len(suffix) <= SUMMARY_MAX:
            entry["summary"] += suffix
        entry["mechanism"] = entry["mechanism"] + f"\n\nSynthetic variant {i}: the same mechanism, reported from another cluster.\n"
        n_tags = rnd.randint(3, 7)
        picked = set(data["tags"][:2])
        while len(picked) < n_tags:
            picked.add(rnd.choices(order, weights)[0])
        entry["tags"] = sorted(picked)
        others = rnd.sample(range(count), k=min(count, 4))
        entry["related"] = sorted({slugs[j] for j in others if j != i})[:3] or []
        entry["often_causes"] = [slugs[(i + 1) % count]] if rnd.random() < 0.2 and count > 1 else []
        faq = list(entry.get("faq", []))
        rnd.shuffle(faq)
        entry["faq"] = faq
        entry["fingerprints"] = [_unique(fp, i, k) for k, fp in enumerate(entry.get("fingerprints", []))]
        folder = out / category
        folder.mkdir(exist_ok=True)
        (folder / f"{slug}.yaml").write_text(yaml.dump(entry, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100), encoding="utf-8")
    return count


def work_corpus(workdir: Path | None, count: int, prefix: str) -> tuple[Path, Path]:
    """A benchmark's work folder (`workdir`, or a new temporary one) and a `count`-entry corpus
    of the real entries in it (`corpus-<count>`, made once: a later run with the same
    `--workdir` reuses it)."""
    work = workdir or Path(tempfile.mkdtemp(prefix=prefix))
    corpus = work / f"corpus-{count}"
    if not corpus.exists():
        make_corpus(Path(__file__).resolve().parent.parent / "entries", count, corpus)
    return work, corpus


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--from", dest="source", default="entries", type=Path, help="the real entries folder")
    p.add_argument("--count", type=int, required=True, help="how many entries to write")
    p.add_argument("--out", type=Path, required=True, help="output folder (replaced)")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    n = make_corpus(args.source, args.count, args.out, args.seed)
    print(f"wrote {n} entries to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
