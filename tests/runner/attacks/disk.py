# Disk past the limit: 400 MB into the sandbox's own temp folder.
with open(os.path.join(os.environ.get("TMPDIR", "/tmp"), "fill"), "wb") as out:
    for _ in range(400):
        out.write(b"x" * (1024 * 1024))
        out.flush()
