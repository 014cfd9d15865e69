void softmax(const float* x, float* y, i64 rows, i64 cols) {
    for (i64 r = 0; r < rows; ++r) {
        const float* xr = x + r * cols;
        float* yr = y + r * cols;
        float m = -INFINITY;
        for (i64 c = 0; c < cols; ++c) m = xr[c] > m ? xr[c] : m;
        double s = 0.0;
        for (i64 c = 0; c < cols; ++c) s += expf(xr[c] - m);
        float inv = (float)(1.0 / s);
        for (i64 c = 0; c < cols; ++c) yr[c] = expf(xr[c] - m) * inv;
    }
}
