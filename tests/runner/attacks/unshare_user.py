# A new user namespace would give the candidate every capability inside it.
check(LIBC.unshare(0x10000000))  # CLONE_NEWUSER
