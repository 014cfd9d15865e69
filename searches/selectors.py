"""Reads: the queries behind pages, exports and the engine. No writes here."""

# === problems ===========================================================================


# === searches ===========================================================================


# === kernels, compare, leaderboards, sharing ============================================
