# Unmount the sandbox's /tmp (or anything else bubblewrap mounted) to reach what lies below.
check(LIBC.umount2(b"/tmp", 2))  # MNT_DETACH
