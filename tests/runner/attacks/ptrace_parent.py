# Trace a process (the way to rewrite the judge's memory from outside).
check(LIBC.ptrace(16, 1, None, None))  # PTRACE_ATTACH to the namespace's PID 1
