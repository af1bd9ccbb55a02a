"""`failpedia lsp` in a second real editor: Neovim's built-in LSP client, headless, opens a log and
an entry and reads the diagnostics back."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPT = Path(__file__).parent / "editors" / "neovim_diagnostics.lua"
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 1 has a total capacity of 79.15 GiB of which 3.44 MiB is free."

pytestmark = pytest.mark.skipif(shutil.which("nvim") is None, reason="Debian's neovim is not installed (make test installs it)")


def test_neovim_shows_diagnostics_for_a_log_and_an_entry(tmp_path: Path) -> None:
    entries = tmp_path / "entries"
    shutil.copytree(REPO / "entries", entries)
    entry = entries / "memory" / "cuda-out-of-memory.yaml"
    lines = entry.read_text().splitlines()
    tags_at = next(i for i, line in enumerate(lines) if line.startswith("tags:"))
    lines[tags_at] = "tags: [oomm, memory]"
    entry.write_text("\n".join(lines) + "\n")
    log = tmp_path / "job" / "slurm-77.out"
    log.parent.mkdir()
    log.write_text(f"starting\n[rank3]: {OOM}\n")
    out = tmp_path / "diagnostics.json"
    env = {
        **{k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")},
        "FP_OUT": str(out),
        # logs are diagnosed with the repository's entries; the broken copy is checked as an open file
        "FP_CMD": json.dumps([sys.executable, "-m", "generator", "lsp", "--entries", str(REPO / "entries")]),
        "FP_FILES": json.dumps([str(log), str(entry)]),
        "PYTHONPATH": str(REPO),
        "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_DATA_HOME": str(tmp_path / "data"),
    }
    done = subprocess.run(
        ["nvim", "--headless", "-u", "NONE", "-i", "NONE", "-n", "-c", f"luafile {SCRIPT}"],
        cwd=tmp_path, env=env, capture_output=True, timeout=120, stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr.decode()
    got = json.loads(out.read_text())
    assert [(d["lnum"], d.get("code"), d["severity"]) for d in got[str(log)]] == [(1, "cuda-out-of-memory", 1)], got
    problems = got[str(entry)]
    assert any(d["lnum"] == tags_at and "unknown tag 'oomm'" in d["message"] for d in problems), problems
