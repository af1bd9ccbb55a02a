"""`failpedia mcp`: driven by the MCP SDK's own client over stdio, as an agent would."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from asyncrun import run_async
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

REPO = Path(__file__).resolve().parent.parent
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB."
WATCHDOG = "[rank0]:[E ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9)"
SECRET_LINES = [
    "-----BEGIN OPENSSH PRIVATE KEY-----",
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
    "root:$y$j9T$Qx1lPg3X0nF6$Zp7VWh2rTtFakeFakeFakeHashHere:19700:0:99999:7:::",
    "CUDA out of memory but not the real message: export HF_TOKEN=hf_abcdefghijklmnop",
    "-----END OPENSSH PRIVATE KEY-----",
]


def session_run(sample: Path, body: Any) -> Any:
    """Start `failpedia mcp` as a child over stdio, run `body(session)`, return its result."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "generator", "mcp", "--entries", str(sample)], cwd=str(REPO),
        env={k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "PYTHONPATH", "VIRTUAL_ENV")},
    )

    async def main() -> Any:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await body(session)

    return run_async(main)


def structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return dict(result.structured_content)
    return json.loads(result.content[0].text)


def test_tools_and_resources_are_listed(sample: Path) -> None:
    async def body(s: ClientSession) -> Any:
        return await s.list_tools(), await s.list_resources(), await s.list_resource_templates()

    tools, resources, templates = session_run(sample, body)
    assert {t.name for t in tools.tools} == {"diagnose_log", "search", "get_entry"}
    assert "failpedia://entries" in {str(r.uri) for r in resources.resources}
    assert "failpedia://entry/{slug}" in {t.uri_template for t in templates.resource_templates}


def test_diagnose_search_and_get_entry(sample: Path, tmp_path: Path) -> None:
    log = tmp_path / "slurm-1234.out"
    log.write_text("\n".join(["step 1", f"[rank1]: {OOM}"] + [f"[rank{r}]:{WATCHDOG[8:]}" for r in (0, 2, 3)]) + "\n")

    async def body(s: ClientSession) -> Any:
        by_text = await s.call_tool("diagnose_log", {"log": log.read_text()})
        by_path = await s.call_tool("diagnose_log", {"path": str(log)})
        found = await s.call_tool("search", {"query": "#oom"})
        entry = await s.call_tool("get_entry", {"slug": "gpu-oom"})
        page = await s.read_resource("failpedia://entry/gpu-oom")
        return by_text, by_path, found, entry, page

    by_text, by_path, found, entry, page = session_run(sample, body)
    for result in (by_text, by_path):
        data = structured(result)
        assert data["initiating"] == "gpu-oom"
        assert [(m["slug"], m["role"]) for m in data["matches"]] == [("gpu-oom", "initiating"), ("nccl-hang", "collateral")]
        first = data["matches"][0]
        assert first["ranks"] == [1] and first["evidence"][0]["line"] == 2 and OOM in first["evidence"][0]["text"]
        assert first["fix"] and first["quick_answer"]
        assert data["initiating_rank"]["rank"] == 1 and "rank 1 printed GPU OOM" in data["initiating_rank"]["reason"]
    assert structured(found)["results"][0]["slug"] == "gpu-oom"
    got = structured(entry)
    assert got["markdown"].startswith("# GPU OOM") and "## Fix" in got["markdown"]
    assert got["data"]["title"] == "GPU OOM" and got["data"]["fingerprints"]
    assert page.contents[0].text == got["markdown"]


def test_bad_arguments_are_clear_errors(sample: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)

    async def body(s: ClientSession) -> Any:
        return [
            await s.call_tool("diagnose_log", {}),
            await s.call_tool("diagnose_log", {"path": str(tmp_path)}),
            await s.call_tool("diagnose_log", {"path": str(fifo)}),
            await s.call_tool("diagnose_log", {"path": "/dev/zero"}),
            await s.call_tool("diagnose_log", {"path": str(tmp_path / "missing.log")}),
            await s.call_tool("get_entry", {"slug": "gpu-oomm"}),
            await s.call_tool("search", {"query": "#dpp"}),
        ]

    results = session_run(sample, body)
    texts = [r.content[0].text for r in results]
    assert all(r.is_error for r in results), texts
    assert "exactly one of" in texts[0]
    assert "a folder" in texts[1]
    assert "not a regular file" in texts[2] and "not a regular file" in texts[3]
    assert "cannot read" in texts[4]
    assert "did you mean 'gpu-oom'" in texts[5]
    assert "did you mean" in texts[6]


@pytest.mark.parametrize("target", ["fake_id_rsa", "/etc/shadow"])
def test_a_steered_path_leaks_no_line_of_a_secret_file(sample: Path, tmp_path: Path, target: str) -> None:
    if target.startswith("/"):
        path = Path(target)
        if not os.access(path, os.R_OK):
            pytest.skip(f"{target} is not readable here")
        lines = [line for line in path.read_text(errors="replace").splitlines() if len(line) >= 8]
    else:
        path = tmp_path / ".ssh" / "id_rsa"
        path.parent.mkdir()
        path.write_text("\n".join(SECRET_LINES) + "\n")
        lines = SECRET_LINES

    async def body(s: ClientSession) -> Any:
        return await s.call_tool("diagnose_log", {"path": str(path), "top": 20})

    result = session_run(sample, body)
    wire = json.dumps(result.model_dump(mode="json"))
    for line in lines:
        for piece in (line, line[: len(line) // 2], line[len(line) // 2 :]):
            if len(piece) >= 8:
                assert json.dumps(piece)[1:-1] not in wire, "a line of the file reached the agent"
