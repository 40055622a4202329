"""Seeded scenario families and the ember-v1 suite (docs/generate.md)."""

from .families import FAMILIES, FAMILY_NAMES, family, generate, generate_bytes, resolve_parameters

__all__ = ["FAMILIES", "FAMILY_NAMES", "family", "generate", "generate_bytes", "resolve_parameters"]
