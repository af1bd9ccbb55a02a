"""`failpedia lsp`: time from opening a big log in the editor to its diagnostics, over stdio.

    .venv/bin/python bench/lsp_latency.py --mib 50
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

from lsprotocol import types as lsp
from pytest_lsp import make_test_lsp_client

REPO = Path(__file__).resolve().parent.parent
LINE = "[rank%d]: {'loss': 2.3141, 'grad_norm': 1.25, 'learning_rate': 1e-05, 'epoch': 0.12}\n"
OOM = "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB.\n"


async def main(mib: int) -> None:
    block = "".join(LINE % (i % 8) for i in range(4096))
    text = block * (mib * 2**20 // len(block)) + OOM
    client = make_test_lsp_client()
    await client.start_io(sys.executable, "-m", "generator", "lsp", "--entries", str(REPO / "entries"), cwd=str(REPO))
    await client.initialize_session(lsp.InitializeParams(capabilities=lsp.ClientCapabilities()))
    uri = "file:///tmp/bench/slurm-1.out"
    start = time.perf_counter()
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        text_document=lsp.TextDocumentItem(uri=uri, language_id="log", version=1, text=text)))
    while uri not in client.diagnostics:
        await client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    took = time.perf_counter() - start
    codes = sorted({d.code for d in client.diagnostics[uri]})
    print(f"{len(text) / 2**20:.0f} MiB log: diagnostics after {took:.2f} s ({len(text) / 2**20 / took:.0f} MiB/s): {codes}")
    await client.shutdown_session()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--mib", type=int, default=50)
    asyncio.run(main(ap.parse_args().mib))
