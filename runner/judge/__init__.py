"""The trusted judge (`python -m runner.judge.referee`): runner code only, no problem or candidate code.
Imports only itself and runner/common; never runner/host or runner/inside."""
