"""The real corpus under entries/: every entry meets the content minimums of the content issue."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from generator.site.build import load_catalog
from generator.diagnosis.matcher import diagnose_bytes, matcher_spec
from generator.site.pages import fingerprint_data
from generator.core.schema import Language, Strength

REPO = Path(__file__).resolve().parent.parent

REQUIRED = {
    "distributed": ["ddp-oom-during-allreduce", "nccl-watchdog-timeout", "nccl-unhandled-system-error", "nccl-unhandled-cuda-error",
                    "nccl-ib-completion-error", "ddp-unused-parameters", "ddp-variable-marked-ready-twice",
                    "collective-mismatch-across-ranks", "rendezvous-timeout", "master-port-in-use", "duplicate-gpu-per-rank",
                    "torchrun-child-failed-sigkill", "fsdp-full-state-dict-oom", "deepspeed-zero3-empty-parameter"],
    "memory": ["cuda-out-of-memory", "cuda-memory-fragmentation", "memory-leak-accumulated-graph", "host-oom-killer"],
    "data": ["dataloader-worker-killed", "dataloader-shared-memory-bus-error", "tokenizer-missing-pad-token"],
    "inference": ["vllm-kv-cache-insufficient"],
    "numerics": ["nan-loss-fp16-overflow", "loss-scale-collapse", "exploding-gradients", "anomaly-nan-in-backward",
                 "attempting-to-unscale-fp16-gradients"],
    "autograd": ["inplace-operation-autograd", "backward-through-graph-twice", "device-mismatch", "dtype-mismatch", "shape-mismatch-matmul"],
    "cuda": ["cuda-device-side-assert", "cublas-execution-failed"],
    "environment": ["cuda-driver-too-old", "no-kernel-image-for-device", "flash-attention-unsupported-gpu"],
    "compilation": ["torch-compile-recompile-limit"],
    "checkpointing": ["state-dict-module-prefix", "state-dict-size-mismatch", "torch-load-weights-only"],
    "performance": ["dataloader-bottleneck"],
}


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(REPO / "entries")


def test_every_listed_entry_exists_in_its_category(catalog) -> None:
    for category, slugs in REQUIRED.items():
        for slug in slugs:
            assert slug in catalog.records, slug
            assert catalog.records[slug].category == category, slug
    assert len(catalog.records) >= 42


def test_content_minimums(catalog) -> None:
    problems = []
    for slug, rec in catalog.records.items():
        e = rec.entry
        if len(e.faq) < 4:
            problems.append(f"{slug}: {len(e.faq)} FAQ answers (need 4)")
        if len(e.related) < 2:
            problems.append(f"{slug}: {len(e.related)} related entries (need 2)")
        if len(e.references) < 2:
            problems.append(f"{slug}: {len(e.references)} references (need 2)")
        if len(set(r.url for r in e.references)) != len(e.references):
            problems.append(f"{slug}: a reference URL is listed twice")
        if not 3 <= len(rec.tags) <= 10:
            problems.append(f"{slug}: {len(rec.tags)} tags")
        if len(e.summary.split(". ")) < 2 and len(e.summary) < 120:
            problems.append(f"{slug}: the quick answer should name the cause and the fix")
        if not e.fix.code:
            problems.append(f"{slug}: no code example")
        for q in e.faq:
            if len(q.a) < 80:
                problems.append(f"{slug}: FAQ answer to {q.q!r} is too thin to be specific")
    assert problems == []


def test_every_python_snippet_compiles(catalog) -> None:
    for slug, rec in catalog.records.items():
        snippets = [c.code for c in rec.entry.fix.code if c.language is Language.python]
        if rec.entry.fix.verify.language is Language.python:
            snippets.append(rec.entry.fix.verify.code)
        for code in snippets:
            ast.parse(code)


def test_failures_with_error_text_have_fingerprints(catalog) -> None:
    silent = {"memory-leak-accumulated-graph", "dataloader-bottleneck", "exploding-gradients", "nan-loss-fp16-overflow"}
    for slug, rec in catalog.records.items():
        if slug not in silent:
            assert rec.entry.fingerprints, f"{slug}: no fingerprints"


def test_a_definitive_example_line_names_its_own_entry_first(catalog) -> None:
    """Fingerprints are specific: a definitive line alone puts its own entry on top, and a strong
    line alone at least makes it a candidate (or needs its `near` context)."""
    spec = matcher_spec(fingerprint_data(catalog))
    wrong = []
    for slug, rec in catalog.records.items():
        for fp in rec.entry.fingerprints:
            if fp.strength is Strength.supporting or fp.near or fp.rising or fp.share_above or fp.metric:
                continue
            for ex in fp.examples:
                got = [m.slug for m in diagnose_bytes(spec, (ex + "\n").encode())]
                if fp.strength is Strength.definitive and (not got or got[0] != slug):
                    wrong.append((slug, ex[:80], got[:3]))
                if fp.strength is Strength.strong and slug not in got:
                    wrong.append((slug, ex[:80], got[:3]))
    assert wrong == []


def test_every_tag_in_use_has_a_description_and_no_tag_is_orphaned(catalog) -> None:
    used = catalog.used_tags()
    assert len(used) >= 20
    for t in used:
        assert len(catalog.tags[t].description) >= 40, t
