from django import forms  # noqa: F401

# === problems ===========================================================================


# === searches, kernels, ideas, sharing ==================================================
