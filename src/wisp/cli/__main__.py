"""``python -m wisp.cli``."""

import sys

from wisp.cli import main

sys.exit(main())
