"""Why ``rnmt.train`` and ``rnmt.evaluate`` are callable packages.

Both names are subpackages and functions of the Python interface (`rnmt.api`). Python sets
a package's attribute to its subpackage whenever that subpackage is imported, so a plain
function ``rnmt.train`` would be replaced by the package as soon as anything imported
``rnmt.train.trainer``. Instead the two packages are made callable: calling one calls the
API function of the same name, while imports and attribute access by dotted name (for
example ``unittest.mock.patch("rnmt.train.trainer...")``) work as for any package.
"""

from __future__ import annotations

import sys
import types
from typing import Any


class CallablePackage(types.ModuleType):
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from rnmt import api

        return getattr(api, self.__name__.rsplit(".", 1)[-1])(*args, **kwargs)


def make_callable(module_name: str) -> None:
    """Turn the already-imported package ``module_name`` into a `CallablePackage`."""
    sys.modules[module_name].__class__ = CallablePackage
