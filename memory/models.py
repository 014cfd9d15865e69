"""The team's memory across searches: idea outcomes and the lessons people approved. Points at `searches`
models by name only, so this package never imports `searches`."""
