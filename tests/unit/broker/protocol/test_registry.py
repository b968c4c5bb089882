"""The API registry: the one source of ApiVersions, consistent with each module's own docstring."""

from __future__ import annotations

import importlib
import re
import typing

import pytest

from ebb_broker.protocol import apis, registry

_HEADER = re.compile(r"^(?P<name>\w+): v(?P<min>\d+)(-(?P<max>\d+))?")


def test_a_second_registration_of_a_key_raises() -> None:
    spec = registry.lookup(21)
    assert spec is not None
    with pytest.raises(registry.DuplicateApiError):
        registry.register(21, 0, 2, spec.handler)


def test_a_range_beyond_the_codec_raises() -> None:
    with pytest.raises(ValueError, match="outside codec"):
        registry.register(57, 0, 99, registry.all_specs()[0].handler)  # UpdateFeatures: codec has v0-2


def test_every_module_opens_with_its_registered_range() -> None:
    modules = [getattr(apis, name) for name in dir(apis) if not name.startswith("_")]
    modules = [m for m in modules if hasattr(m, "API_KEY")]
    assert len(modules) == len(registry.all_specs())
    for module in modules:
        module = importlib.import_module(module.__name__)
        m = _HEADER.match(module.__doc__ or "")
        assert m, f"{module.__name__} must open with 'Name: vA-B'"
        spec = registry.lookup(module.API_KEY)
        assert spec is not None
        assert (int(m["min"]), int(m["max"] or m["min"])) in {
            (spec.min_version, spec.max_version),
            (spec.rejected_below, spec.max_version),
        }, module.__name__
        assert "Behaviour:" in (module.__doc__ or "") and "Version notes:" in (module.__doc__ or "")


@pytest.mark.parametrize("spec", registry.all_specs(), ids=lambda s: s.name)
def test_every_handler_names_the_request_class_it_is_handed(spec: registry.ApiSpec) -> None:
    """Handlers annotate `request` with the generated class of their API (the server decodes it with that
    class): kafka-python ships no type information, so mypy sees Any, and this test keeps the annotation
    true."""
    hints = typing.get_type_hints(spec.handler)
    assert hints["request"] is spec.messages.request, (
        f"{spec.handler.__module__}: request: {hints['request']}"
    )
