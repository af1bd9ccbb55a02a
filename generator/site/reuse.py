"""What the dev server's next patch may take over from its last one, unmade.

`Reuse` calls a module-level function over plain arguments, or hands back what the same call
made last time: the same function, under the same name, with arguments equal to the last ones.
The plan's parts (an entry's two pages, one listing's pages) and each page's plan digest go
through it, so an edit plans and digests again only the pages whose inputs it changed; what a
page is made from at render time is keyed apart (reads.py). The function sees nothing but its
arguments, so equal arguments give an equal result: the reuse is as safe as the function is
plain. Arguments are compared with `==`, element by element, where the very same objects (a page
taken over) compare at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

__all__ = ["Reuse"]

P = ParamSpec("P")
T = TypeVar("T")


class Reuse:
    """One run's calls, each taken over from `before` (the last run's) where it is the same call.
    Only the latest run's calls are kept: a run starts from the one before it, not from all."""

    def __init__(self, before: Reuse | None = None) -> None:
        self._before: dict[str, tuple[Callable[..., Any], tuple[tuple[Any, ...], dict[str, Any]], Any]] = before._now if before is not None else {}
        self._now: dict[str, tuple[Callable[..., Any], tuple[tuple[Any, ...], dict[str, Any]], Any]] = {}
        self.made = self.kept = 0  # calls run and calls taken over (for the bench)

    def __call__(self, name: str, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """`fn(*args, **kwargs)`, or what the last run's call by this `name` made, where that was
        the same function with arguments equal to these."""
        inputs = (args, kwargs)
        old = self._before.get(name)
        if old is not None and old[0] is fn and old[1] == inputs:
            self._now[name] = old
            self.kept += 1
            out: T = old[2]
            return out
        out = fn(*args, **kwargs)
        self._now[name] = (fn, inputs, out)
        self.made += 1
        return out
