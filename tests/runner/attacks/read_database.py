# The app's database (a live admin session key is in it) and a canary beside it.
open(os.path.join("{data_dir}", "kernellab.sqlite3"), "rb").read()
