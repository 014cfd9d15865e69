# Processes past the limit.
import subprocess

children = [subprocess.Popen(["sleep", "30"]) for _ in range(200)]
