"""What runs inside a sandbox, beside the problem's or the candidate's code (`python -m
runner.inside.child`). Imports only itself and runner/common; never runner/host or runner/judge."""
