"""`python -m generator` is the `failpedia` command."""

from .cli import run

run()
