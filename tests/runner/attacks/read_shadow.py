# The host's password hashes.
open("/etc/shadow").read()
