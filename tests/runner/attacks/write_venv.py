# A .pth file in site-packages runs in every later Python of the host (worker, web server).
import sysconfig

with open(os.path.join(sysconfig.get_paths()["purelib"], "kernellab_attack.pth"), "w") as out:
    out.write("import os\n")
