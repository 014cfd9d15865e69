# Become root again.
os.setuid(0)
