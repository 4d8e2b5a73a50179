"""Suite-wide collection settings.

``tests/typing/`` holds files that mypy checks (``tests/test_typing.py``) and that are never run:
``--doctest-modules`` would import them, so they are not collected.
"""

collect_ignore_glob = ["typing/*"]
