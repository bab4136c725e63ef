# ---- triton_per_0.py
import triton
import triton.language as tl


@triton.jit
def triton_per_0(arg0_x_1, arg1_w_1, arg2_b_1, buf2, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
    xnumel = 16
    rnumel = 64
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    rbase = tl.arange(0, RBLOCK)[None, :]
    rindex = rbase
    rmask = rindex < rnumel
    # buf0 (sum reduction [16] over [64])
    tmp0 = tl.load(arg0_x_1 + (rindex + 64*xindex), xmask & rmask, other=0)
    tmp1 = tl.where(rmask, tmp0, 0)
    tmp2 = tl.sum(tmp1, 1)[:, None]
    # buf1 (sum reduction [16] over [64])
    tmp3 = tmp2 / 64.0
    tmp4 = tmp0 - tmp3
    tmp5 = tmp4 * tmp4
    tmp6 = tl.where(rmask, tmp5, 0)
    tmp7 = tl.sum(tmp6, 1)[:, None]
    # buf2 (pointwise [16, 64])
    tmp8 = tmp7 / 64.0
    tmp9 = tmp8 + 9.999999747378752e-06
    tmp10 = 1.0 / tl.sqrt_rn(tmp9)
    tmp11 = tmp4 * tmp10
    tmp12 = tl.load(arg1_w_1 + rindex, rmask, other=0)
    tmp13 = tmp11 * tmp12
    tmp14 = tl.load(arg2_b_1 + rindex, rmask, other=0)
    tmp15 = tmp13 + tmp14
    tl.store(buf2 + (rindex + 64*xindex), tmp15, xmask & rmask)

# ---- wrapper
def call(args):
    arg0_x_1, arg1_w_1, arg2_b_1, = args
    buf2 = empty_strided((16, 64), (64, 1), dtype=torch.float32, device=device)
    triton_per_0.run(arg0_x_1, arg1_w_1, arg2_b_1, buf2)  # grid: cdiv(16, XBLOCK)
    return buf2
