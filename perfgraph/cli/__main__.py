"""``python -m perfgraph.cli.main``: the same as the ``perfgraph`` script."""

import sys

from perfgraph.cli.main import main

sys.exit(main())
