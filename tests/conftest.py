"""Shared helpers: a valid-entry factory, a tree writer and a small sample project."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from browser import browser, real_site, site_url  # noqa: F401  (session fixtures, registered once)

TAGS = {
    "tags": [
        {"name": "ddp", "description": "DistributedDataParallel and its gradient buckets.", "aliases": ["distributed-data-parallel"]},
        {"name": "oom", "description": "Out-of-memory failures of every kind.", "aliases": ["out-of-memory"]},
        {"name": "nccl", "description": "NVIDIA's collective communication library."},
        {"name": "memory", "description": "Any failure about memory."},
    ]
}
CATEGORIES = {
    "categories": [
        {"name": "distributed", "title": "Distributed training", "description": "Multi-GPU and multi-node failures."},
        {"name": "memory", "title": "Memory", "description": "Running out of memory on the GPU or the host."},
    ]
}

_ENTRY: dict[str, Any] = {
    "title": "Sample failure",
    "summary": "A sample failure used by the tests; the cause and the fix in two sentences.",
    "tags": ["oom", "memory"],
    "fingerprints": [
        {"pattern": r"CUDA out of memory\. Tried to allocate \d+", "strength": "strong",
         "examples": ["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB."]}
    ],
    "symptoms": [{"signal": "The run stops", "why": "Because memory ran out."}],
    "observe": ["The first step fails."],
    "mechanism": "Memory is allocated on top of the peak.\n\n```python\nx = 1\n```\n",
    "affected": ["PyTorch"],
    "confirm": ["Print the peak memory."],
    "fix": {
        "summary": "Use less memory.",
        "steps": ["Lower the batch size."],
        "code": [{"stack": "pytorch", "language": "python", "code": "batch_size = 8\n"}],
        "verify": {"language": "bash", "code": "python train.py", "expect": "Training runs."},
    },
    "prevention": ["Leave headroom."],
    "faq": [{"q": "Does it affect inference?", "a": "Only when weights do not fit."}],
    "related": [],
    "references": [{"title": "CUDA semantics", "url": "https://pytorch.org/docs/stable/notes/cuda.html"}],
}


def valid_entry(**changes: Any) -> dict[str, Any]:
    """A valid entry as data; keyword arguments replace top-level fields."""
    data = copy.deepcopy(_ENTRY)
    data.update(changes)
    return data


def write_tree(root: Path, files: dict[str, Any]) -> Path:
    """Write files under root: str/bytes as-is, anything else as YAML."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        elif isinstance(content, str):
            path.write_text(content, encoding="utf-8")
        else:
            path.write_text(yaml.safe_dump(content, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return root


def sample_files() -> dict[str, Any]:
    """Three entries that link to each other, with registries."""
    return {
        "tags.yaml": TAGS,
        "categories.yaml": CATEGORIES,
        "memory/gpu-oom.yaml": valid_entry(title="GPU OOM", related=["ddp-oom"], often_causes=["nccl-hang"]),
        "distributed/ddp-oom.yaml": valid_entry(
            title="DDP OOM",
            tags=["ddp", "oom"],
            related=["gpu-oom", "nccl-hang"],
            fingerprints=[{"pattern": r"Reducer bucket \d+ failed", "strength": "strong", "examples": ["Reducer bucket 3 failed"]}],
        ),
        "distributed/nccl-hang.yaml": valid_entry(
            title="NCCL hang",
            tags=["nccl", "ddp"],
            related=["ddp-oom"],
            fingerprints=[{"pattern": "Watchdog caught collective operation timeout", "strength": "definitive",
                           "examples": ["[rank1]:[E ProcessGroupNCCL.cpp:607] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1)"]}],
        ),
    }


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    """A valid entries folder."""
    return write_tree(tmp_path / "entries", sample_files())


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]):
    """Run the CLI in-process; returns (exit code, stdout, stderr)."""
    from generator.surfaces.cli import main

    def run(*argv: str) -> tuple[int, str, str]:
        try:
            code = main(list(argv))
        except SystemExit as e:  # argparse usage errors
            code = int(e.code or 0)
        out, err = capsys.readouterr()
        return code, out, err

    return run
