"""`python -m generator` is the `failpedia` command."""

import sys

from .cli import main

sys.exit(main())
