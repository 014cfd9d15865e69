"""The step between the parent and bubblewrap, run as its own small process (single-threaded,
so it is safe where a preexec hook in the threaded parent is not): join the sandbox's
cgroups and set its rlimits (RLIMIT_NPROC counts the slot uid's processes once setpriv
has dropped to it), then exec bubblewrap.

    python -I -S launch.py '{"cgroups": [...], "rlimits": [[res, soft, hard], ...]}' BWRAP ARGS...
"""

import json
import os
import resource
import sys


def main() -> None:
    plan = json.loads(sys.argv[1])
    command = sys.argv[2:]
    for folder in plan["cgroups"]:
        with open(os.path.join(folder, "cgroup.procs"), "w") as out:
            out.write(str(os.getpid()))
    for which, soft, hard in plan["rlimits"]:
        resource.setrlimit(which, (soft, hard))
    if plan.get("idle"):  # compiles take only idle CPU; the parent raises it for the GPU phases (compile.py)
        resource.setrlimit(resource.RLIMIT_NICE, (0, 0))
        os.setpriority(os.PRIO_PROCESS, 0, 19)
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    os.execv(command[0], command)


if __name__ == "__main__":
    main()
