# ---- triton_poi_0.py
import triton
import triton.language as tl


@triton.jit
def maximum(a, b):
    """Elementwise max that propagates nan, as torch.maximum does."""
    return tl.where((a > b) | (a != a), a, b)


@triton.jit
def triton_poi_0(arg0_x_1, arg1_b_1, buf0, XBLOCK: tl.constexpr):
    xnumel = 2048
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)
    xmask = xindex < xnumel
    # buf0 (pointwise [32, 64])
    tmp0 = tl.load(arg0_x_1 + xindex, xmask, other=0)
    tmp1 = tl.load(arg1_b_1 + (xindex % 64), xmask, other=0)
    tmp2 = tmp0 + tmp1
    tmp3 = tl.full([1], 0.0, tl.float32)
    tmp4 = maximum(tmp2, tmp3)
    tl.store(buf0 + xindex, tmp4, xmask)

# ---- wrapper
def call(args):
    arg0_x_1, arg1_b_1, = args
    buf0 = empty_strided((32, 64), (64, 1), dtype=torch.float32, device=device)
    triton_poi_0.run(arg0_x_1, arg1_b_1, buf0)  # grid: cdiv(2048, XBLOCK)
    return buf0
