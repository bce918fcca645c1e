"""The route groups the API serves: those of the route modules every component's manifest
names (homework/manifest.py, `routes`), in the manifests' order. A component brings its
routes by naming its module there; the API serves them whether or not the component is
loaded (its routes then answer 503, saying which component is missing), and the OpenAPI
document is generated from the same groups."""
from __future__ import annotations

import importlib

from ... import manifest
from .routes import RouteGroup


def groups() -> tuple[type[RouteGroup], ...]:
    out: list[type[RouteGroup]] = []
    for m in manifest.every():
        for name in m.routes:
            module = importlib.import_module(f"{__package__}.{name}")
            out += [g for g in vars(module).values() if isinstance(g, type) and issubclass(g, RouteGroup)
                    and g.__module__ == module.__name__]
    return tuple(out)


GROUPS = groups()
