"""The version of wisp (``wisp.__version__``), for modules below the ``wisp`` facade."""

__version__ = "0.1.0"
