# The parent pins timed processes to the timing cores, the eager baseline's too; a candidate that
# moved itself would be timed on other cores than the baseline it is compared with.
os.sched_setaffinity(0, range(os.cpu_count() or 1))
