"""ModelDesk: build models from your own data on your own machine, offline."""

__version__ = "0.1.0"
