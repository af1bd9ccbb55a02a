"""The fix-snippet checker: runs inside a verify environment (see verify.check_snippets), with the
standard library only. Argument: a JSON file of [{"id", "code"}, ...]. Prints one line per
snippet, `\\x1efailpedia-snippet {json}`, with the problems found (line and column within the
snippet), how many calls were checked and constructed, and why it was skipped, if it was.

What it proves about a snippet, without running it:
- every `import`/`from ... import` of it works (a module that is not installed skips the names
  it would bind, and says so);
- every call of an imported name, or of an attribute path from one (`transformers.TrainingArguments`,
  `torch.cuda.memory._record_memory_history`), names something that exists, and its arguments
  bind to that callable's real signature (an unknown keyword such as `evaluation_strategy=` in
  transformers 5 is a problem);
- a class called with literal arguments only (numbers, strings, lists, dicts, and attribute
  paths of imported names such as `torch.bfloat16`) is constructed, so a value the current
  release refuses (e.g. `eval_strategy="step"`) is a problem too. An exception that names a
  device (CUDA, GPU, ...) says the object needs hardware this machine lacks: noted, not a problem.
Function calls are never made (they may train, download or allocate); only classes are built.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import json
import re
import sys
import warnings
from typing import Any

_NOT_LITERAL = object()
_DEVICE_RE = re.compile(r"\b(cuda|gpus?|npu|xpu|mps|hpu|tpu|mlu|device|nvidia|accelerator)\b", re.IGNORECASE)


def _dotted(node: ast.expr) -> list[str] | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return parts[::-1]
    return None


class _Checker:
    def __init__(self) -> None:
        self.names: dict[str, Any] = {}  # name bound by an import → the object
        self.missing: set[str] = set()  # names whose module is not installed
        self.problems: list[dict[str, Any]] = []
        self.notes: list[str] = []
        self.checked = 0
        self.constructed = 0

    def problem(self, node: ast.AST, message: str) -> None:
        self.problems.append({"line": getattr(node, "lineno", 1), "col": getattr(node, "col_offset", 0), "message": message[:500]})

    def imports(self, tree: ast.AST) -> None:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    top = alias.name.split(".")[0]
                    try:
                        module = importlib.import_module(alias.name)
                    except ModuleNotFoundError as e:
                        self._not_found(node, e, alias.name, alias.asname or top)
                        continue
                    except Exception as e:  # noqa: BLE001 - any failure to import is the finding
                        self.problem(node, f"import {alias.name}: {type(e).__name__}: {e}")
                        continue
                    self.names[alias.asname or top] = module if alias.asname else importlib.import_module(top)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                try:
                    module = importlib.import_module(node.module)
                except ModuleNotFoundError as e:
                    for alias in node.names:
                        self._not_found(node, e, node.module, alias.asname or alias.name)
                    continue
                except Exception as e:  # noqa: BLE001
                    self.problem(node, f"from {node.module} import ...: {type(e).__name__}: {e}")
                    continue
                for alias in node.names:
                    if alias.name == "*":
                        continue
                    try:
                        value = getattr(module, alias.name)
                    except AttributeError:
                        try:
                            value = importlib.import_module(f"{node.module}.{alias.name}")
                        except Exception:  # noqa: BLE001
                            self.problem(node, f"cannot import name {alias.name!r} from {node.module!r}{_version(node.module)}")
                            continue
                    self.names[alias.asname or alias.name] = value

    def _not_found(self, node: ast.AST, e: ModuleNotFoundError, module: str, bound: str) -> None:
        top = module.split(".")[0]
        if e.name and e.name.split(".")[0] == top and importlib.util.find_spec(top) is None:
            self.missing.add(bound)
            self.notes.append(f"{top} is not installed")
        else:  # the package is there, but a module of it is not: the snippet names a wrong path
            self.problem(node, f"import {module}: {e}")

    def resolve(self, node: ast.expr) -> Any:
        """The object an attribute path from an imported name denotes; _NOT_LITERAL when the
        path does not start at one; raises AttributeError (with the path) when it breaks."""
        parts = _dotted(node)
        if not parts or parts[0] not in self.names:
            return _NOT_LITERAL
        obj = self.names[parts[0]]
        for i, attr in enumerate(parts[1:], 1):
            try:
                obj = getattr(obj, attr)
            except AttributeError:
                name = getattr(obj, "__name__", None)
                if inspect.ismodule(obj) and name:
                    try:
                        obj = importlib.import_module(f"{name}.{attr}")
                        continue
                    except Exception:  # noqa: BLE001
                        pass
                raise AttributeError(f"{'.'.join(parts[:i])} has no attribute {attr!r}{_version(parts[0], self.names)}") from None
        return obj

    def value(self, node: ast.expr) -> Any:
        try:
            return ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            pass
        if isinstance(node, (ast.Attribute, ast.Name)):
            try:
                return self.resolve(node)
            except AttributeError:
                return _NOT_LITERAL
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            items = [self.value(x) for x in node.elts]
            if any(x is _NOT_LITERAL for x in items):
                return _NOT_LITERAL
            return list(items) if isinstance(node, ast.List) else tuple(items) if isinstance(node, ast.Tuple) else set(items)
        if isinstance(node, ast.Dict) and all(k is not None for k in node.keys):
            keys = [self.value(k) for k in node.keys if k is not None]
            values = [self.value(v) for v in node.values]
            if any(x is _NOT_LITERAL for x in (*keys, *values)):
                return _NOT_LITERAL
            try:
                return dict(zip(keys, values))
            except TypeError:
                return _NOT_LITERAL
        return _NOT_LITERAL

    def calls(self, tree: ast.AST) -> None:
        calls = sorted((n for n in ast.walk(tree) if isinstance(n, ast.Call)), key=lambda n: (n.lineno, n.col_offset))
        for call in calls:
            parts = _dotted(call.func)
            if not parts or parts[0] not in self.names:
                continue
            shown = ".".join(parts)
            try:
                target = self.resolve(call.func)
            except AttributeError as e:
                self.problem(call, str(e))
                continue
            self.checked += 1
            if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
                continue  # *args or **kwargs: nothing to bind
            args = [self.value(a) for a in call.args]
            kwargs = {k.arg: self.value(k.value) for k in call.keywords if k.arg is not None}
            try:
                signature = inspect.signature(target)
            except (TypeError, ValueError):
                signature = None
            if signature is not None:
                try:
                    signature.bind(*args, **kwargs)
                except TypeError as e:
                    self.problem(call, f"{shown}(...): {e}{_version(parts[0], self.names)}")
                    continue
            literal = not any(v is _NOT_LITERAL for v in (*args, *kwargs.values()))
            if literal and inspect.isclass(target) and not issubclass(target, BaseException):
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        target(*args, **kwargs)
                    self.constructed += 1
                except Exception as e:  # noqa: BLE001 - what the release refuses is the finding
                    message = f"{type(e).__name__}: {e}"
                    if _DEVICE_RE.search(message):
                        self.notes.append(f"{shown}(...) needs hardware this machine lacks: {message[:200]}")
                    else:
                        self.problem(call, f"{shown}(...) raised {message}{_version(parts[0], self.names)}")


def _version(module: str, names: dict[str, Any] | None = None) -> str:
    top = module.split(".")[0]
    if names is not None and top in names:
        obj = names[top]
        top = str((obj.__name__ if inspect.ismodule(obj) else getattr(obj, "__module__", None)) or top).split(".")[0]
    try:
        from importlib.metadata import PackageNotFoundError, packages_distributions, version

        dist = (packages_distributions().get(top) or [top])[0]
        return f" ({dist} {version(dist)})"
    except (ImportError, PackageNotFoundError, ValueError):
        return ""


def check(code: str) -> dict[str, Any]:
    checker = _Checker()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(code)
    except SyntaxError as e:
        return {"problems": [{"line": e.lineno or 1, "col": (e.offset or 1) - 1, "message": f"does not compile: {e.msg}"}]}
    checker.imports(tree)
    checker.calls(tree)
    notes = "; ".join(dict.fromkeys(checker.notes))
    return {"problems": checker.problems, "checked": checker.checked, "constructed": checker.constructed, "notes": notes}


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as f:
        jobs = json.load(f)
    for job in jobs:
        try:
            result = check(job["code"])
        except Exception as e:  # noqa: BLE001 - one snippet's failure must not hide the others
            result = {"problems": [{"line": 1, "col": 0, "message": f"the checker failed on it: {type(e).__name__}: {e}"}]}
        sys.stdout.write("\x1efailpedia-snippet " + json.dumps({"id": job["id"], **result}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
