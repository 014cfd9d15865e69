# The kernel keyring holds credentials of the host's users.
check(LIBC.syscall(250, 0, -3, 0, 0, 0))  # keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING)
