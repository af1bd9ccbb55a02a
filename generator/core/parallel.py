"""Spread independent work over the cores: a forked pool that inherits the work list.

`run_parallel(fn, items)` returns `[fn(x) for x in items]`. With several cores and enough items
it forks worker processes after the items exist, so they inherit them (nothing big is pickled
on the way in; only results come back). It falls back to a plain loop when forking is not
safe (other threads are running, or the platform cannot fork) or not worth it. Its `meanwhile`
runs in the caller while the workers work (a pool's threads are running then, so a
`run_parallel` inside it runs as a plain loop).

`start_parallel(fn, *args)` starts one call in a forked process and returns at once; the
function it returns waits for the call's result. Without a second core (or where forking is not
safe) the call runs when its result is asked for.

`checkpoint()`, called now and then in a long loop, lets a background thread give way: inside
`giving_way(wait)`, in that thread, each checkpoint calls `wait` (the dev server's index update
waits there while a patch runs, instead of sharing the interpreter with it).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

__all__ = ["checkpoint", "giving_way", "run_parallel", "start_parallel", "worker_count"]

T = TypeVar("T")
R = TypeVar("R")

_WORK: tuple[Callable[[Any], Any], Sequence[Any]] | None = None


_TURN = threading.local()  # .wait: what checkpoint() calls in this thread


@contextmanager
def giving_way(wait: Callable[[], object]) -> Iterator[None]:
    """Within the block, in this thread, every `checkpoint()` calls `wait`."""
    _TURN.wait = wait
    try:
        yield
    finally:
        del _TURN.wait


def checkpoint() -> None:
    """A place where a long computation may wait for more urgent work (see `giving_way`)."""
    wait = getattr(_TURN, "wait", None)
    if wait is not None:
        wait()


def worker_count(jobs: int | None = None) -> int:
    available = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(jobs or available, available))


def _worker_start() -> None:
    """A worker forgets the handlers it inherited (serve's SIGTERM handler only sets a flag in the
    parent): a worker left behind by an interrupted start-up stops on a plain `kill`."""
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, signal.SIG_DFL)


def _run_chunk(bounds: tuple[int, int]) -> list[Any]:
    assert _WORK is not None
    fn, items = _WORK
    return [fn(items[i]) for i in range(*bounds)]


def run_parallel(fn: Callable[[T], R], items: Sequence[T], jobs: int | None = None, min_items: int = 32,
                 meanwhile: Callable[[], object] | None = None) -> list[R]:
    """`[fn(x) for x in items]`; `meanwhile()` is called once, in this process, while the
    workers (if any) work: serial work beside them instead of before or after, with every core busy."""
    global _WORK
    workers = worker_count(jobs)
    if workers < 2 or len(items) < min_items or not _can_fork():
        if meanwhile is not None:
            meanwhile()
        return [fn(x) for x in items]
    size = max(1, len(items) // (workers * 32))  # small chunks: no worker idles long at the end
    chunks = [(i, min(i + size, len(items))) for i in range(0, len(items), size)]
    _WORK = (fn, items)
    try:
        with multiprocessing.get_context("fork").Pool(workers, initializer=_worker_start) as pool:
            pending = pool.map_async(_run_chunk, chunks)
            if meanwhile is not None:
                meanwhile()
            parts = pending.get()
    finally:
        _WORK = None
    return [r for part in parts for r in part]


def _can_fork() -> bool:
    return "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1


def start_parallel(fn: Callable[..., R], *args: Any, jobs: int | None = None) -> Callable[[], R]:
    """Start `fn(*args)` beside the caller, in a forked process (unless `jobs` is 1); returns what
    waits for its result (and raises what it raised)."""
    if worker_count(jobs) < 2 or not _can_fork():
        return lambda: fn(*args)
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_send_result, args=(receive, send, fn, args), daemon=True)
    proc.start()
    send.close()

    def result() -> R:
        try:
            ok, value = receive.recv()
        except EOFError:
            raise RuntimeError(f"the process running {fn.__name__} ended without a result") from None
        finally:
            receive.close()
            proc.join()
        if not ok:
            raise value
        out: R = value
        return out

    return result


def _send_result(receive: Any, send: Any, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
    # The read end this process inherited is closed first: were it open here, a result larger
    # than the pipe's buffer would block this process for ever once the caller is gone (the CLI
    # leaves by os._exit, which stops no daemon process), holding the caller's stdout open.
    receive.close()
    _worker_start()
    try:
        outcome = (True, fn(*args))
    except BaseException as e:
        outcome = (False, e)
    try:
        send.send(outcome)
    except OSError:  # the caller went on without the result (its build failed first)
        pass
