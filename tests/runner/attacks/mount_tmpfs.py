# Mount something of its own (e.g. to hide what the judge reads).
check(LIBC.mount(b"none", b"/tmp", b"tmpfs", 0, None))
