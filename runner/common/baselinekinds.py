"""The baselines a caller may ask for beside eager and torch.compile's default: torch.compile's
other modes and the eager model as CUDA graphs, and which of them need CUDA. Plain Python: the
parent checks what is asked against them (host/baselines.py, host/schema.py); the problem's
validation sandbox builds them (inside/morebaselines.py)."""

MORE_BASELINES = ("reduce-overhead", "max-autotune", "cudagraph")
CUDA_ONLY = ("reduce-overhead", "cudagraph")
