RUNNER_VERSION = "1.1.0"  # 1.1: validations name degenerate problems
SCHEMA = 1
