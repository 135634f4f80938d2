"""The server's math as small pure functions with exact-number tests: aggregation of stacked
parameters, clustering steps (k-means, assignments, responsibilities), metric names and
cluster-recovery scores."""
