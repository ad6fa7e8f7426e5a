"""The package's version, ``recorder.__version__``.

In a module of its own: the CLI's ``--version`` and every cassette's header read it
without importing the rest of the package.
"""

__version__ = "0.1.0"
