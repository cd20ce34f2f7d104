"""``python -m coordinator``: the ``inquiry`` command, for where its script is not on ``PATH``."""

import sys

from coordinator.cli import main

sys.exit(main())
