"""`python -m maxarpa` runs the maxarpa CLI."""

import sys

from maxarpa.cli import main

sys.exit(main())
