"""The policy registry and loading a user's policy from ``module:attr``."""

from __future__ import annotations

import functools
import importlib
import inspect
from collections.abc import Callable
from typing import Any

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
    return _made(ref, target)


def _made(ref: str, target: Any) -> Policy:
    """The policy ``module:attr`` names: an instance as it is; a class or a factory (a Python function, a method,
    a partial) called with no argument. Anything else is refused before it is called, and a call that fails or
    makes something that is not a policy is refused too, each in one line: ``os:system`` is not called at all."""
    refused = f"{ref} is not a policy: it needs a name, reset(seed) and decide(observation)"
    if isinstance(target, Policy) and not isinstance(target, type):
        return target
    if isinstance(target, type):
        if not all(callable(getattr(target, method, None)) for method in ("reset", "decide")):
            raise InvalidInput("policy", refused)
    elif not (inspect.isfunction(target) or inspect.ismethod(target) or isinstance(target, functools.partial)):
        raise InvalidInput("policy", refused)
    try:
        inspect.signature(target).bind()
    except TypeError:
        raise InvalidInput("policy", f"{refused} (a class or factory is called with no argument)") from None
    except ValueError:  # no signature to read
        raise InvalidInput("policy", refused) from None
    try:
        policy = target()
    except Exception as exc:
        raise InvalidInput("policy", f"{ref}() failed: {type(exc).__name__}: {str(exc)[:200]}") from None
    if not isinstance(policy, Policy):
        raise InvalidInput("policy", refused)
    return policy
