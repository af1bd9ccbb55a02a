"""Labelled test logs: each `<name>.log` has a `<name>.yaml` sidecar.

`tests/logs/` is the curated set the diagnoser must get right; `tests/devlogs/` is the larger
development set sampled from issue threads the way users hit failures (see its README).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

LOG_DIR = Path(__file__).resolve().parent / "logs"
DEVLOG_DIR = Path(__file__).resolve().parent / "devlogs"


@dataclass(frozen=True)
class LabelledLog:
    path: Path
    expect: str | None
    collateral: tuple[str, ...]
    # Development-set fields (absent in tests/logs/ sidecars).
    failure: str | None = None
    negative: bool = False
    covered: bool | None = None

    @property
    def name(self) -> str:
        return self.path.name


def labelled_logs(directory: Path = LOG_DIR) -> list[LabelledLog]:
    out = []
    for log in sorted(directory.glob("*.log")):
        meta = yaml.safe_load(log.with_suffix(".yaml").read_text(encoding="utf-8"))
        out.append(
            LabelledLog(
                log,
                meta.get("expect"),
                tuple(meta.get("collateral") or ()),
                meta.get("failure"),
                bool(meta.get("negative", False)),
                meta.get("covered"),
            )
        )
    return out
