"""Track a shop's stock and price orders."""

__version__ = "0.3.0"
