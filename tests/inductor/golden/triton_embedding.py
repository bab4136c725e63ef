# ---- triton_poi_0.py
import triton
import triton.language as tl


@triton.jit
def check_index(index, size, mask, error_flag):
    """An index loaded from a tensor (gather): where ``mask`` holds and it is outside
    ``[0, size)``, record error 1. Such an index is replaced by 0, so nothing is read out of
    bounds."""
    outside = (index < 0) | (index >= size)
    bad = outside & mask
    tl.store(error_flag + tl.zeros(bad.shape, tl.int32), 1, bad)
    return tl.where(outside, 0, index)


@triton.jit
def triton_poi_0(arg1_i_1, arg0_w_1, buf0, error_flag, XBLOCK: tl.constexpr):
    xnumel = 48
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)
    xmask = xindex < xnumel
    # buf0 (pointwise [2, 3, 8])
    tmp0 = tl.load(arg1_i_1 + (xindex // 8), xmask, other=0)
    tmp1 = check_index(tmp0.to(tl.int64), 10, xmask, error_flag)
    tmp2 = tl.load(arg0_w_1 + (8*tmp1 + (xindex % 8)), xmask, other=0)
    tmp3 = tmp2 * 2.0
    tl.store(buf0 + xindex, tmp3, xmask)

# ---- wrapper
def call(args):
    arg0_w_1, arg1_i_1, = args
    error_flag = new_error_flag(device)
    buf0 = empty_strided((2, 3, 8), (24, 8, 1), dtype=torch.float32, device=device)
    triton_poi_0.run(arg1_i_1, arg0_w_1, buf0, error_flag)  # grid: cdiv(48, XBLOCK)
    check_error_flag(error_flag)
    return buf0
