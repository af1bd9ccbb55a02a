"""The labelled test logs under tests/logs/: each `<name>.log` has a `<name>.yaml` sidecar."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

LOG_DIR = Path(__file__).resolve().parent / "logs"


@dataclass(frozen=True)
class LabelledLog:
    path: Path
    expect: str | None
    collateral: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.path.name


def labelled_logs() -> list[LabelledLog]:
    out = []
    for log in sorted(LOG_DIR.glob("*.log")):
        meta = yaml.safe_load(log.with_suffix(".yaml").read_text(encoding="utf-8"))
        out.append(LabelledLog(log, meta.get("expect"), tuple(meta.get("collateral") or ())))
    return out
