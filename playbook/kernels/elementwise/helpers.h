DEVICE_FN float relu_f(float a) { return a < 0.0f ? 0.0f : a; }
DEVICE_FN float sigmoid_f(float a) { return 1.0f / (1.0f + expf(-a)); }
DEVICE_FN float silu_f(float a) { return a / (1.0f + expf(-a)); }
DEVICE_FN float elu_f(float a, float alpha) { return a > 0.0f ? a : alpha * (expf(a) - 1.0f); }
DEVICE_FN float leaky_f(float a, float slope) { return a < 0.0f ? a * slope : a; }
DEVICE_FN float softplus_f(float a, float beta, float threshold) {
    return a * beta > threshold ? a : log1pf(expf(a * beta)) / beta;
}
DEVICE_FN float clamp_f(float a, float lo, float hi) { return a < lo ? lo : (a > hi ? hi : a); }
