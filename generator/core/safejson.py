"""JSON that stays inert anywhere: compact, sorted, with <, > and & escaped (so a `</script>` in
content cannot close the <script> element JSON-LD sits in, and no HTML parser sees a tag)."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["safe_json"]


def safe_json(data: Any) -> str:
    text = json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026") + "\n"
