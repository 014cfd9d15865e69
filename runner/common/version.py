RUNNER_VERSION = "1.5.0"  # 1.1: validations name degenerate problems; 1.2: static refusals narrowed, side streams judged by whether forward waits; 1.3: the rule that judged (KernelLab or KernelBench), the eager mean; 1.4: more baselines (compile modes, CUDA graphs); 1.5: values under torch.backends and undeclared torch._C names judged at run time
SCHEMA = 1
