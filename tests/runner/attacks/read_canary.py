# A secret beside the database.
open(os.path.join("{data_dir}", "canary.txt")).read()
