# ---- triton_red_0.py
import triton
import triton.language as tl


@triton.jit
def maximum(a, b):
    """Elementwise max that propagates nan, as torch.maximum does."""
    return tl.where((a > b) | (a != a), a, b)


@triton.jit
def max_propagate_nan(values, axis: tl.constexpr):
    """Max along ``axis``; nan if any value is nan (tl.max skips nans)."""
    has_nan = tl.max((values != values).to(tl.int8), axis)
    return tl.where(has_nan != 0, float("nan"), tl.max(values, axis))


@triton.jit
def triton_red_0(arg0_x_1, buf1, buf3, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
    xnumel = 32
    rnumel = 64
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    rbase = tl.arange(0, RBLOCK)[None, :]
    # buf0 (max reduction [32] over [64])
    acc0 = tl.full([XBLOCK, RBLOCK], float("-inf"), tl.float32)
    for roffset in range(0, rnumel, RBLOCK):
        rindex = roffset + rbase
        rmask = rindex < rnumel
        tmp1 = tl.load(arg0_x_1 + (rindex + 64*xindex), xmask & rmask, other=0)
        tmp2 = tl.where(rmask, tmp1, float("-inf"))
        acc0 = maximum(acc0, tmp2)
    tmp3 = max_propagate_nan(acc0, 1)[:, None]
    # buf1 (pointwise [32, 64])
    for roffset in range(0, rnumel, RBLOCK):
        rindex = roffset + rbase
        rmask = rindex < rnumel
        tmp4 = tl.load(arg0_x_1 + (rindex + 64*xindex), xmask & rmask, other=0)
        tmp5 = tmp4 - tmp3
        tmp6 = tl.exp(tmp5)
        tl.store(buf1 + (rindex + 64*xindex), tmp6, xmask & rmask)
    tl.debug_barrier()
    # buf2 (sum reduction [32] over [64])
    acc7 = tl.full([XBLOCK, RBLOCK], 0, tl.float32)
    for roffset in range(0, rnumel, RBLOCK):
        rindex = roffset + rbase
        rmask = rindex < rnumel
        tmp8 = tl.load(buf1 + (rindex + 64*xindex), xmask & rmask, other=0)
        tmp9 = tl.where(rmask, tmp8, 0)
        acc7 = acc7 + tmp9
    tmp10 = tl.sum(acc7, 1)[:, None]
    # buf3 (pointwise [32, 64])
    for roffset in range(0, rnumel, RBLOCK):
        rindex = roffset + rbase
        rmask = rindex < rnumel
        tmp11 = tl.load(buf1 + (rindex + 64*xindex), xmask & rmask, other=0)
        tmp12 = 1.0 / tmp10
        tmp13 = tmp11 * tmp12
        tl.store(buf3 + (rindex + 64*xindex), tmp13, xmask & rmask)

# ---- wrapper
def call(args):
    arg0_x_1, = args
    buf1 = empty_strided((32, 64), (64, 1), dtype=torch.float32, device=device)
    buf3 = empty_strided((32, 64), (64, 1), dtype=torch.float32, device=device)
    triton_red_0.run(arg0_x_1, buf1, buf3)  # grid: cdiv(32, XBLOCK)
    del buf1
    return buf3
