"""Modules imported on first use, so that ``import sketchauth…`` does not pay for what a call needs.

``secrets`` (which loads ``hmac``, ``hashlib`` and OpenSSL), ``hashlib`` and ``json`` cost about
8 ms of CPU together on import, as much as the library's own modules; most programs import a
sketch long before they encode, and some (``sketchauth --help``, the registry listing) never do.
A :class:`LazyModule` stands for the module: its first attribute read imports it, through
:func:`importlib.import_module`, which is thread-safe (a thread that asks while another is
importing waits for a complete module; the standard library's ``LazyLoader`` gives no such
guarantee on Python 3.11); the proxy keeps the module, so later reads cost one attribute lookup more.

>>> json = LazyModule("json")
>>> json.dumps([1, 2])
'[1, 2]'
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

__all__ = ["LazyModule"]


class LazyModule:
    """The module ``name``, imported when one of its attributes is first read."""

    __slots__ = ("_module", "_name")

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attribute: str) -> Any:
        # Only names the proxy itself lacks arrive here, i.e. the module's.
        module = self._module
        if module is None:
            # import_module returns a complete module (it waits for another thread's import);
            # keeping it is then safe, and later reads skip the import machinery.
            module = self._module = importlib.import_module(self._name)
        return getattr(module, attribute)

    def __repr__(self) -> str:
        return f"<lazily imported module {self._name!r}>"
