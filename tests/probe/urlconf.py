"""Every URL pattern of the project, read from the URL conf (the Django admin's own URLs excepted)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from django.urls import URLPattern, URLResolver, get_resolver

API_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
PAGE_METHODS = ("GET", "POST")


@dataclass(frozen=True)
class Route:
    name: str  # "namespace:name"
    route: str  # the pattern, e.g. "api/campaigns/<slug:slug>/"
    arguments: tuple[str, ...]

    @property
    def is_api(self) -> bool:
        return self.route.startswith("api/")

    @property
    def methods(self) -> tuple[str, ...]:
        return API_METHODS if self.is_api else PAGE_METHODS


def _walk(patterns: list[URLPattern | URLResolver], prefix: str, namespace: str | None) -> Iterator[Route]:
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            if pattern.namespace == "admin":
                continue
            yield from _walk(pattern.url_patterns, prefix + str(pattern.pattern), pattern.namespace or namespace)
            continue
        if pattern.name is None:
            raise AssertionError(f"URL {prefix}{pattern.pattern} has no name; name it so the probe can give it a rule")
        name = f"{namespace}:{pattern.name}" if namespace else pattern.name
        arguments = tuple(pattern.pattern.converters) if hasattr(pattern.pattern, "converters") else ()
        yield Route(name=name, route=prefix + str(pattern.pattern), arguments=arguments)


def project_routes() -> list[Route]:
    return list(_walk(get_resolver().url_patterns, "", None))
