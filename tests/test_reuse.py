"""reuse.Reuse: what the dev server's plan takes over from the last patch. A call is taken over
only when the function and its arguments are the same as in the last run, and only the last run
is kept (the dev server's memory stays level over a session)."""

from __future__ import annotations

from generator.site.reuse import Reuse

CALLS: list[tuple[int, ...]] = []


def made(*args: int, scale: int = 1) -> list[int]:
    CALLS.append(args)
    return [a * scale for a in args]


def other(*args: int, scale: int = 1) -> list[int]:
    return [-a for a in args]


def test_a_call_is_taken_over_only_when_function_and_arguments_are_the_same() -> None:
    CALLS.clear()
    first = Reuse()
    out = first("x", made, 1, 2)
    second = Reuse(first)
    assert second("x", made, 1, 2) is out and CALLS == [(1, 2)]  # equal arguments: the same result, not run again
    assert second("y", made, 1, 2) is not out  # another name
    assert second.kept == 1 and second.made == 1
    third = Reuse(second)
    assert third("x", made, 1, 3) == [1, 3]  # other arguments
    assert third("y", made, 1, 2, scale=2) == [2, 4]  # other keyword arguments
    fourth = Reuse(third)
    assert fourth("x", other, 1, 3) == [-1, -3]  # another function
    assert fourth("y", made, 1, 2) == [1, 2] and CALLS[-1] == (1, 2)  # no keyword, where the last had one


def test_only_the_last_run_is_kept() -> None:
    CALLS.clear()
    first = Reuse()
    first("x", made, 1)
    second = Reuse(first)  # makes no call named x
    second("y", made, 2)
    third = Reuse(second)
    third("x", made, 1)
    assert CALLS == [(1,), (2,), (1,)] and third.kept == 0
