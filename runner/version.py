RUNNER_VERSION = "1.2.0"  # 1.1: validations name degenerate problems; 1.2: static refusals narrowed, side streams judged by whether forward waits
SCHEMA = 1
