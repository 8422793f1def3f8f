"""The version of streameval (the package's ``__version__``, written into state stores)."""

__version__ = "0.1.0"
