// kernel0: buf0 (max reduction [32] over [64]); buf1 (pointwise [32, 64]); buf2 (sum reduction [32] over [64]); buf3 (pointwise [32, 64])
static void kernel0(const float* __restrict__ arg0_x_1, float* __restrict__ buf3) {
  for (int64_t x0 = 0; x0 < 32; ++x0) {
    float buf0;
    float buf2;
    float acc0 = -std::numeric_limits<float>::infinity();
    int acc0_nan = 0;
    #pragma omp simd reduction(max:acc0) reduction(|:acc0_nan)
    for (int64_t r0 = 0; r0 < 64; ++r0) {
      float tmp1 = arg0_x_1[r0 + 64*x0];
      acc0 = std::max(acc0, tmp1);
      acc0_nan |= (tmp1 != tmp1);
    }
    if (acc0_nan) acc0 = std::numeric_limits<float>::quiet_NaN();
    buf0 = acc0;
    float acc2 = 0;
    #pragma omp simd reduction(+:acc2)
    for (int64_t x1 = 0; x1 < 64; ++x1) {
      float tmp3 = arg0_x_1[64*x0 + x1];
      float tmp4 = tmp3 - buf0;
      float tmp5 = td_expf(tmp4);
      buf3[64*x0 + x1] = tmp5;
      float tmp6 = buf3[64*x0 + x1];
      acc2 = acc2 + tmp6;
    }
    buf2 = acc2;
    #pragma omp simd
    for (int64_t x1 = 0; x1 < 64; ++x1) {
      float tmp7 = buf3[64*x0 + x1];
      float tmp8 = 1.0f / buf2;
      float tmp9 = tmp7 * tmp8;
      buf3[64*x0 + x1] = tmp9;
    }
  }
}

extern "C" int segment0(const float* arg0_x_1, float* buf3) {
  int td_error = TD_OK;  // this call's own
  kernel0(arg0_x_1, buf3);
  return td_error;
}
