// kernel0: buf0 (pointwise [32, 64])
static void kernel0(const float* __restrict__ arg0_x_1, const float* __restrict__ arg1_b_1, float* __restrict__ buf0) {
  for (int64_t x0 = 0; x0 < 32; ++x0) {
    #pragma omp simd
    for (int64_t x1 = 0; x1 < 64; ++x1) {
      float tmp0 = arg0_x_1[64*x0 + x1];
      float tmp1 = arg1_b_1[x1];
      float tmp2 = tmp0 + tmp1;
      float tmp3 = td_maximum(tmp2, 0.0f);
      buf0[64*x0 + x1] = tmp3;
    }
  }
}

extern "C" int segment0(const float* arg0_x_1, const float* arg1_b_1, float* buf0) {
  int td_error = TD_OK;  // this call's own
  kernel0(arg0_x_1, arg1_b_1, buf0);
  return td_error;
}
