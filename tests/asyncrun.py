"""Run a coroutine on an event loop of its own, in a thread of its own.

The browser tests' Playwright session keeps an event loop running in the main thread for the
whole test session, so `asyncio.run` there fails; the agent and editor tests drive their async
clients (the MCP SDK's, pytest-lsp's) from a fresh thread instead."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any


def run_async(make: Callable[[], Awaitable[Any]], timeout: float = 180) -> Any:
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(make())  # type: ignore[arg-type]
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = e

    thread = threading.Thread(target=target, name="async-test-client", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise TimeoutError(f"the async client did not finish within {timeout} s")
    if "error" in box:
        raise box["error"]
    return box.get("value")
