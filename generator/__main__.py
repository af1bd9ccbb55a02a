"""`python -m generator` is the `failpedia` command."""

from .surfaces.cli import run

run()
