"""``python -m baton.cli`` runs the ``baton`` command."""

import sys

from baton.cli import main

sys.exit(main())
