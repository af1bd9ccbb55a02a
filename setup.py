"""The build hook: a wheel carries the encyclopedia it was built from (generator/bundle/).

Everything else about the package is in pyproject.toml. The hook imports the generator from
this source tree, so the build needs its dependencies (listed in [build-system] requires)."""

import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


class BuildPyWithBundle(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):  # an editable install reads the checkout itself
            return
        sys.path.insert(0, str(HERE))
        from generator.core.problems import BuildFailed
        from generator.site.bundle import write_bundle

        try:
            count = write_bundle(HERE, Path(self.build_lib) / "generator" / "bundle")
        except BuildFailed as e:
            for p in e.problems:
                print(p, file=sys.stderr)
            raise SystemExit(f"the entries have {e}; run 'failpedia check'") from None
        print(f"bundled {count} entries into the package", file=sys.stderr)


# The metric reader's loop in C (generator/core/_scan.c). Optional: without a compiler the
# install still works and diagnose reads metrics in Python, by the same rules, only slower.
METRICSCAN = Extension("generator.core._scan", ["generator/core/_scan.c"], optional=True)

setup(cmdclass={"build_py": BuildPyWithBundle}, ext_modules=[METRICSCAN])
