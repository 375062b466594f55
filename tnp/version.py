"""``tnp.version``: tnp's version, as ``numpy.version`` gives NumPy's."""
version = __version__ = short_version = full_version = "0.1.0"
release = True
git_revision = "unknown"
