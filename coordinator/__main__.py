"""``python -m coordinator``: the ``inquiry`` command, for where its script is not on ``PATH``."""

import sys

from coordinator.cli._main import main

sys.exit(main())
