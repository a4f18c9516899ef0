"""The policy registry and loading a user's policy from ``module:attr``."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from oncallsim.model import InvalidInput
from oncallsim.simulation import Policy

__all__ = ["BUILTIN_POLICIES", "load_policy", "register"]

BUILTIN_POLICIES: dict[str, Callable[[], Policy]] = {}


def register(name: str) -> Callable[[Callable[[], Policy]], Callable[[], Policy]]:
    def add(factory: Callable[[], Policy]) -> Callable[[], Policy]:
        BUILTIN_POLICIES[name] = factory
        return factory

    return add


def load_policy(ref: str | Policy) -> Policy:
    """A fresh policy: a built-in name, or ``package.module:attr`` naming a Policy class, factory or instance."""
    if not isinstance(ref, str):
        return ref
    if ref in BUILTIN_POLICIES:
        return BUILTIN_POLICIES[ref]()
    module_name, sep, attr = ref.partition(":")
    if not sep or not module_name or not attr:
        raise InvalidInput("policy", f"unknown policy {ref!r}; built-in: {', '.join(BUILTIN_POLICIES)}, or module:attr")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise InvalidInput("policy", f"cannot import {module_name!r}: {exc}") from None
    try:
        target = getattr(module, attr)
    except AttributeError:
        raise InvalidInput("policy", f"module {module_name!r} has no attribute {attr!r}") from None
    # a class (which would itself pass the protocol check) or a factory is called; an instance is used as is
    policy = target() if isinstance(target, type) or (callable(target) and not isinstance(target, Policy)) else target
    if not isinstance(policy, Policy):
        raise InvalidInput("policy", f"{ref} is not a policy: it needs a name, reset(seed) and decide(observation)")
    return policy
