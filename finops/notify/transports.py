"""The registry of transports, one module per channel kind: importing this module registers them all."""

from . import email, slack, teams, webhook  # noqa: F401  each registers its transport
from .base import TRANSPORTS

__all__ = ["TRANSPORTS"]
