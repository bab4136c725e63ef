# ---- triton_red_0.py
import triton
import triton.language as tl


@triton.jit
def argmax_update(acc, acc_index, value, index):
    """One step of a looped argmax, lane by lane: take ``value`` if it is larger, or the first nan.
    Each lane sees increasing indices, so a strict ``>`` keeps the first of equal values."""
    take = (value > acc) | ((value != value) & (acc == acc))
    return tl.where(take, value, acc), tl.where(take, index, acc_index)


@triton.jit
def argmax_first(values, indices, axis: tl.constexpr):
    """The index of the first largest value along ``axis``, or of the first nan (torch.argmax)."""
    is_nan = values != values
    has_nan = tl.max(is_nan.to(tl.int8), axis, keep_dims=True) != 0
    best = tl.max(values, axis, keep_dims=True)
    candidate = tl.where(has_nan, is_nan, values == best)
    return tl.min(tl.where(candidate, indices, 9223372036854775807), axis)


@triton.jit
def triton_red_0(arg0_x_1, buf0, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
    xnumel = 8
    rnumel = 64
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    rbase = tl.arange(0, RBLOCK)[None, :]
    # buf0 (argmax reduction [8] over [64])
    acc0 = tl.full([XBLOCK, RBLOCK], float("-inf"), tl.float32)
    acc0_index = tl.zeros([XBLOCK, RBLOCK], tl.int64)
    for roffset in range(0, rnumel, RBLOCK):
        rindex = roffset + rbase
        rmask = rindex < rnumel
        tmp1 = tl.load(arg0_x_1 + (rindex + 64*xindex), xmask & rmask, other=0)
        tmp2 = tl.where(rmask, tmp1, float("-inf"))
        tmp3 = rindex.to(tl.int64)
        acc0, acc0_index = argmax_update(acc0, acc0_index, tmp2, tmp3)
    tmp4 = argmax_first(acc0, acc0_index, 1)[:, None]
    tl.store(buf0 + xindex, tmp4, xmask)

# ---- wrapper
def call(args):
    arg0_x_1, = args
    buf0 = empty_strided((8,), (1,), dtype=torch.int64, device=device)
    triton_red_0.run(arg0_x_1, buf0)  # grid: cdiv(8, XBLOCK)
    return buf0
