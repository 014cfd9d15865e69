# Write into the repository (settings, templates, scripts).
with open(os.path.join("{repo}", "kernellab_attack.txt"), "w") as out:
    out.write("attacked\n")
