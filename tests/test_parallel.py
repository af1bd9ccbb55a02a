"""core.parallel.start_parallel: one call run beside the caller, in a forked process."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from generator.core.parallel import start_parallel, worker_count

ROOT = Path(__file__).resolve().parent.parent


def _pid_plus(n: int) -> tuple[int, int]:
    return os.getpid(), n + 1


def _fails(n: int) -> int:
    raise ValueError(f"bad {n}")


def test_start_parallel_returns_or_raises_the_calls_outcome() -> None:
    assert start_parallel(_pid_plus, 41)()[1] == 42
    assert start_parallel(_pid_plus, 1, jobs=1)() == (os.getpid(), 2)  # one job: in this process, when asked
    with pytest.raises(ValueError, match="bad 3"):
        start_parallel(_fails, 3)()


@pytest.mark.skipif(worker_count() < 2, reason="one core: the call runs in the caller")
def test_start_parallel_forks_when_it_can() -> None:
    # In a fresh interpreter: here other tests' threads may be running, and then it does not fork.
    script = (
        "import os\n"
        "from generator.core.parallel import start_parallel\n"
        "def who(): return os.getpid()\n"
        "print(start_parallel(who)() != os.getpid())\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"


@pytest.mark.skipif(worker_count() < 2, reason="one core: the call runs in the caller")
def test_a_call_whose_caller_left_without_its_result_ends(tmp_path: Path) -> None:
    # A failed build exits (os._exit, as the CLI does) without asking for the site scan it
    # started. A result larger than a pipe's buffer must not keep that process, and the stdout
    # it shares with the caller (`failpedia build | tee log`), alive.
    pid_file = tmp_path / "pid"
    script = (
        "import os, time\n"
        "from generator.core.parallel import start_parallel\n"
        "def big(path):\n"
        "    open(path, 'w').write(str(os.getpid()))\n"
        "    return 'x' * 1_000_000\n"
        f"start_parallel(big, {str(pid_file)!r})\n"
        f"while not os.path.exists({str(pid_file)!r}): time.sleep(0.01)\n"
        "time.sleep(0.2)\n"
        "os._exit(1)\n"
    )
    # communicate() returns only when every holder of the stdout pipe has closed it.
    done = subprocess.run([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=20, cwd=ROOT)
    assert done.returncode == 1, done.stderr
    child = int(pid_file.read_text())
    for _ in range(500):
        try:
            if "zombie" in Path(f"/proc/{child}/status").read_text():  # ended, not yet reaped
                break
        except OSError:  # ended and reaped
            break
        time.sleep(0.01)
    else:
        os.kill(child, 9)
        pytest.fail("the process that ran the call is still waiting to hand its result over")


@pytest.mark.skipif(worker_count() < 2, reason="one core: the loop runs in the caller")
def test_run_parallel_runs_meanwhile_in_the_caller_while_the_workers_work(tmp_path: Path) -> None:
    # In a fresh interpreter (other tests' threads would make it loop in this process). Each
    # worker waits for a file that only `meanwhile` writes: were `meanwhile` run before forking
    # or after the workers, the items would not see it (or never finish, until the time-out).
    # A run_parallel inside `meanwhile` runs as a plain loop, in the caller.
    script = (
        "import os, sys, time\n"
        "from generator.core.parallel import run_parallel\n"
        f"flag = {str(tmp_path / 'flag')!r}\n"
        "parent = os.getpid()\n"
        "def item(n):\n"
        "    end = time.monotonic() + 20\n"
        "    while not os.path.exists(flag) and time.monotonic() < end:\n"
        "        time.sleep(0.01)\n"
        "    return os.getpid() != parent and os.path.exists(flag)\n"
        "inner = []\n"
        "def meanwhile():\n"
        "    time.sleep(0.3)  # the workers are waiting by now\n"
        "    open(flag, 'w').close()\n"
        "    inner.extend(run_parallel(lambda n: os.getpid(), range(100)))\n"
        "print(all(run_parallel(item, range(64), meanwhile=meanwhile)), set(inner) == {parent})\n"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["True", "True"], out.stderr
