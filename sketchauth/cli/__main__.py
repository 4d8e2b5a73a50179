"""``python -m sketchauth.cli``: the ``sketchauth`` command without the console script."""

import sys

from sketchauth.cli import main

sys.exit(main())
