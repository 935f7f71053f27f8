"""`python -m arsdecode` runs the arsdecode CLI (through `cli.entry`, as the console script)."""

import sys

from arsdecode.cli.entry import main

sys.exit(main())
