"""Thin stage modules and the Typer CLI over the `clusterfl` core. DVC calls the CLI."""

# First, before any stage module imports torch or numpy: `clusterfl` pins every math
# library's CPU code path, and the libraries read those variables when they load. The CLI
# (`pipeline.cli:app`, so every DVC stage) and `python -m pipeline.X` import this first.
import clusterfl  # noqa: F401
