"""Thin stage modules and the Typer CLI over the `clusterfl` core. DVC calls the CLI."""
