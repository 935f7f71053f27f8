"""`python -m arsdecode` runs the arsdecode CLI."""

import sys

from arsdecode.cli.main import main

sys.exit(main())
