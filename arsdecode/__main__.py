"""`python -m arsdecode` runs the arsdecode CLI."""

import sys

from arsdecode.cli import main

sys.exit(main())
