"""Helpers with no models and no knowledge of searches: rate limits, security middleware,
HTML builders (SVG plots, the diff table) and the lease renewer thread."""
