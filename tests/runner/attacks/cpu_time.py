# CPU time past the limit: spin until stopped.
while True:
    pass
