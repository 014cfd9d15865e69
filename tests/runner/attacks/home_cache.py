# The shared per-user cache of the host (older runners kept baselines there).
os.makedirs("/root/.cache/kernellab", exist_ok=True)
with open("/root/.cache/kernellab/attack", "w") as out:
    out.write("attacked\n")
