"""What every layer shares: the errors users see, file I/O, option parsing, the name
registries, the types the round loop exchanges, and a suite's params files (their chain and
grid). Imports nothing of clusterfl outside this package."""
