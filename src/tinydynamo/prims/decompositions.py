"""Decompositions of the composite aten ops of neural networks (book chapter 7, "Prims").

Matmuls and convolutions, activations, softmax, layer, batch and group norm, losses, pooling,
embedding and dropout, vector norms, and the backward of slicing, forward and backward. Like PyTorch's ``torch/_decomp/decompositions.py``
they are ordinary torch code running on ProxyTensors: every tensor operation in them is an aten
op that is decomposed in turn (by ``refs.py``), so they read like the math they implement.
Where a prim is the natural word (``prims.mm``, ``prims.iota``) they call it directly.

Two numerical habits come from aten and matter for matching it:

* float16/bfloat16 inputs are computed in float32 and rounded once at the end (``opmath``);
* variances take two passes (mean, then mean squared deviation), never E[x²] - E[x]².
"""
import math

import torch

from .primitives import prims
from .refs import opmath_dtype, select_scatter, slice_scatter, var_mean_two_pass
from .registry import DecompositionDeclined, DecompositionError, register_decomposition

aten = torch.ops.aten


def opmath(x):
    """x in the dtype aten computes it in (float32 for float16/bfloat16)."""
    return x.to(opmath_dtype(x.dtype))


# --------------------------------------------------------------------------- matmul and convolution

def _no_bool_matmul(a):
    """aten multiplies bool matrices only when one is empty (else it raises): aten decides."""
    if a.dtype == torch.bool:
        raise DecompositionDeclined("a matmul of bool tensors")


@register_decomposition(aten.mm.default)
def mm(a, b):
    _no_bool_matmul(a)
    return prims.mm(a, b)


@register_decomposition(aten.bmm.default)
def bmm(a, b):
    _no_bool_matmul(a)
    return prims.bmm(a, b)


def _scaled_sum(product, bias, beta, alpha, dtype):
    """alpha * product + beta * bias; beta == 0 ignores bias entirely (even nan), as BLAS does.
    For integer tensors aten first converts alpha and beta to the integer type (0.6 becomes 0)."""
    if not (dtype.is_floating_point or dtype.is_complex):
        alpha, beta = int(alpha), int(beta)
    if alpha != 1:
        product = product * alpha
    if beta == 0:
        return product
    return product + (bias if beta == 1 else bias * beta)


def _no_low_precision_gemm(mat):
    """A bfloat16 or float16 GEMM with a bias stays aten's own kernel (an extern call): it
    accumulates in float32 and rounds once, and on CPU it is oneDNN's low-precision GEMM. The
    same product in float32 (below) rounds the same way, but takes several times as long."""
    if mat.dtype in (torch.bfloat16, torch.float16):
        raise DecompositionDeclined(f"a {mat.dtype} matmul with a bias: aten's kernel is exact and faster")


@register_decomposition(aten.addmm.default)
def addmm(bias, mat1, mat2, *, beta=1, alpha=1):
    """In opmath, rounded once, as aten's kernel (which scales and adds before rounding)."""
    _no_bool_matmul(mat1)
    _no_low_precision_gemm(mat1)
    product = prims.mm(opmath(mat1), opmath(mat2))
    return _scaled_sum(product, opmath(bias), beta, alpha, mat1.dtype).to(mat1.dtype)


@register_decomposition(aten.baddbmm.default)
def baddbmm(bias, batch1, batch2, *, beta=1, alpha=1):
    _no_bool_matmul(batch1)
    _no_low_precision_gemm(batch1)
    product = prims.bmm(opmath(batch1), opmath(batch2))
    return _scaled_sum(product, opmath(bias), beta, alpha, batch1.dtype).to(batch1.dtype)


@register_decomposition(aten.convolution.default)
def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    return prims.convolution(input, weight, bias, stride, padding, dilation, transposed,
                             output_padding, groups)


@register_decomposition(aten.convolution_backward.default)
def convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
                         transposed, output_padding, groups, output_mask):
    grad_input = grad_weight = grad_bias = None
    if output_mask[0] or output_mask[1]:
        grad_input, grad_weight = prims.convolution_backward(
            grad_output, input, weight, stride, padding, dilation, transposed, output_padding,
            groups, list(output_mask[:2]))
    if output_mask[2]:
        grad_bias = opmath(grad_output).sum([0, *range(2, grad_output.ndim)]).to(grad_output.dtype)
    return grad_input, grad_weight, grad_bias


# --------------------------------------------------------------------------- activations

@register_decomposition(aten.relu.default)
def relu(x):
    return torch.clamp_min(x, 0)  # max(x, 0), keeping nan


@register_decomposition(aten.threshold_backward.default)
def threshold_backward(grad_output, x, threshold):
    return torch.where(x <= threshold, 0, grad_output)


SQRT1_2 = 1 / math.sqrt(2)
SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)
GELU_KAPPA = 0.044715


def _gelu_tanh_inner(x):
    """tanh(sqrt(2/pi) * (x + 0.044715 x³)), the tanh approximation of erf(x / sqrt(2))."""
    return torch.tanh(SQRT_2_OVER_PI * (x + GELU_KAPPA * (x * x * x)))


@register_decomposition(aten.gelu.default)
def gelu(x, *, approximate="none"):
    """x * Φ(x), Φ the standard normal CDF: 0.5 x (1 + erf(x / √2)), or its tanh approximation."""
    dtype, x = x.dtype, opmath(x)
    if approximate == "tanh":
        out = 0.5 * x * (1 + _gelu_tanh_inner(x))
    else:
        out = x * 0.5 * (1 + torch.erf(x * SQRT1_2))
    return out.to(dtype)


@register_decomposition(aten.gelu_backward.default)
def gelu_backward(grad_output, x, *, approximate="none"):
    dtype, grad, x = x.dtype, opmath(grad_output), opmath(x)
    if approximate == "tanh":
        # d/dx [0.5 x (1 + t)] with t = tanh(u), u = √(2/π)(x + κx³):
        # 0.5 (1 + t) + 0.5 x (1 - t²) √(2/π)(1 + 3κx²)
        t = _gelu_tanh_inner(x)
        du_dx = SQRT_2_OVER_PI * (1 + 3 * GELU_KAPPA * (x * x))
        derivative = 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * du_dx
    else:
        # d/dx [x Φ(x)] = Φ(x) + x φ(x), φ the standard normal density
        cdf = 0.5 * (1 + torch.erf(x * SQRT1_2))
        pdf = INV_SQRT_2PI * torch.exp(-0.5 * x * x)
        derivative = cdf + x * pdf
    return (grad * derivative).to(dtype)


@register_decomposition(aten.silu.default)
def silu(x):
    dtype, x = x.dtype, opmath(x)
    return (x / (1 + torch.exp(-x))).to(dtype)


@register_decomposition(aten.silu_backward.default)
def silu_backward(grad_output, x):
    dtype, grad, x = x.dtype, opmath(grad_output), opmath(x)
    s = torch.sigmoid(x)
    return (grad * s * (1 + x * (1 - s))).to(dtype)


@register_decomposition(aten.sigmoid_backward.default)
def sigmoid_backward(grad_output, output):
    dtype = output.dtype
    return (opmath(grad_output) * (1 - opmath(output)) * opmath(output)).to(dtype)


@register_decomposition(aten.tanh_backward.default)
def tanh_backward(grad_output, output):
    dtype, y = output.dtype, opmath(output)
    return (opmath(grad_output) * (1 - y * y)).to(dtype)


@register_decomposition(aten.leaky_relu.default)
def leaky_relu(x, negative_slope=0.01):
    dtype, x = x.dtype, opmath(x)
    return torch.where(x > 0, x, x * negative_slope).to(dtype)


@register_decomposition(aten.leaky_relu_backward.default)
def leaky_relu_backward(grad_output, x, negative_slope, self_is_result):
    dtype, grad = x.dtype, opmath(grad_output)
    return torch.where(opmath(x) > 0, grad, grad * negative_slope).to(dtype)


@register_decomposition(aten.elu.default)
def elu(x, alpha=1.0, scale=1.0, input_scale=1.0):
    """scale * x for x > 0, else alpha * scale * (exp(input_scale * x) - 1)."""
    dtype, x = x.dtype, opmath(x)
    return torch.where(x > 0, x * scale, torch.expm1(x * input_scale) * (alpha * scale)).to(dtype)


@register_decomposition(aten.elu_backward.default)
def elu_backward(grad_output, alpha, scale, input_scale, is_result, self_or_result):
    """From the input x: alpha scale input_scale exp(input_scale x) below 0. From the result y
    (in-place elu saves it): input_scale (y + alpha scale), the same number."""
    dtype, grad, v = self_or_result.dtype, opmath(grad_output), opmath(self_or_result)
    if is_result:
        negative = grad * input_scale * (v + alpha * scale)
    else:
        negative = grad * (input_scale * alpha * scale) * torch.exp(v * input_scale)
    return torch.where(v <= 0, negative, grad * scale).to(dtype)


@register_decomposition(aten.softplus.default)
def softplus(x, beta=1.0, threshold=20.0):
    """log(1 + exp(beta x)) / beta, or x itself where beta x > threshold (where they agree)."""
    dtype, x = x.dtype, opmath(x)
    scaled = x * beta
    return torch.where(scaled > threshold, x, torch.log1p(torch.exp(scaled)) / beta).to(dtype)


@register_decomposition(aten.softplus_backward.default)
def softplus_backward(grad_output, x, beta, threshold):
    """The derivative is sigmoid(beta x): exp(beta x) / (1 + exp(beta x))."""
    dtype, grad, x = x.dtype, opmath(grad_output), opmath(x)
    z = torch.exp(x * beta)
    return torch.where(x * beta > threshold, grad, grad * z / (z + 1)).to(dtype)


@register_decomposition(aten.hardsigmoid.default)
def hardsigmoid(x):
    dtype, x = x.dtype, opmath(x)
    return (torch.clamp(x + 3, 0, 6) / 6).to(dtype)


@register_decomposition(aten.hardsigmoid_backward.default)
def hardsigmoid_backward(grad_output, x):
    dtype, grad, x = x.dtype, opmath(grad_output), opmath(x)
    return torch.where((x > -3) & (x < 3), grad / 6, 0.0).to(dtype)


@register_decomposition(aten.hardswish.default)
def hardswish(x):
    dtype, x = x.dtype, opmath(x)
    return (x * torch.clamp(x + 3, 0, 6) / 6).to(dtype)


@register_decomposition(aten.hardswish_backward.default)
def hardswish_backward(grad_output, x):
    """0 up to -3, x / 3 + 1/2 strictly between -3 and 3, 1 from 3 on (aten's boundaries)."""
    dtype, grad, x = x.dtype, opmath(grad_output), opmath(x)
    return torch.where(x <= -3, 0.0, torch.where(x < 3, grad * (x / 3 + 0.5), grad)).to(dtype)


@register_decomposition(aten.hardtanh.default)
def hardtanh(x, min_val=-1.0, max_val=1.0):
    """A clamp that keeps x's dtype (aten rejects bool)."""
    if x.dtype == torch.bool:
        raise DecompositionDeclined("hardtanh of a bool tensor")
    return torch.clamp(x, min_val, max_val).to(x.dtype)


@register_decomposition(aten.hardtanh_backward.default)
def hardtanh_backward(grad_output, x, min_val, max_val):
    """The gradient passes strictly inside (min_val, max_val)."""
    return torch.where((x <= min_val) | (x >= max_val), 0.0, grad_output).to(grad_output.dtype)


@register_decomposition(aten.mish.default)
def mish(x):
    """x tanh(softplus(x))."""
    dtype, x = x.dtype, opmath(x)
    return (x * torch.tanh(softplus(x))).to(dtype)


@register_decomposition(aten.mish_backward.default)
def mish_backward(grad_output, x):
    """With t = tanh(softplus(x)): t + x sigmoid(x) (1 - t²)."""
    dtype, grad, x = x.dtype, opmath(grad_output), opmath(x)
    t = torch.tanh(softplus(x))
    return (grad * (t + x * torch.sigmoid(x) * (1 - t * t))).to(dtype)


# --------------------------------------------------------------------------- softmax

def _result_dtype(x, half_to_float):
    return torch.float32 if half_to_float else x.dtype


def _subtract_max(x, dim):
    """x - max(x) along dim (a max of no elements does not exist: empty x stays as it is)."""
    return x - torch.amax(x, dim, keepdim=True) if x.numel() else x


@register_decomposition(aten._softmax.default)
def softmax(x, dim, half_to_float):
    """exp(x - max) / sum(exp(x - max)): subtracting the max keeps exp from overflowing.

    As aten's CPU kernel, each element is multiplied by 1 / sum, computed once per row: a
    vector division costs several times a multiplication, and it was the row's last pass."""
    dtype, x = _result_dtype(x, half_to_float), opmath(x)
    unnormalized = torch.exp(_subtract_max(x, dim))
    return (unnormalized * torch.reciprocal(unnormalized.sum(dim, keepdim=True))).to(dtype)


@register_decomposition(aten._log_softmax.default)
def log_softmax(x, dim, half_to_float):
    dtype, x = _result_dtype(x, half_to_float), opmath(x)
    shifted = _subtract_max(x, dim)
    return (shifted - torch.log(torch.exp(shifted).sum(dim, keepdim=True))).to(dtype)


@register_decomposition(aten._softmax_backward_data.default)
def softmax_backward(grad_output, output, dim, input_dtype):
    """dx = y * (dy - sum(dy * y)) for y = softmax(x)."""
    grad, y = opmath(grad_output), opmath(output)
    grad_y = grad * y
    return (grad_y - y * grad_y.sum(dim, keepdim=True)).to(input_dtype)


@register_decomposition(aten._log_softmax_backward_data.default)
def log_softmax_backward(grad_output, output, dim, input_dtype):
    """dx = dy - exp(y) * sum(dy) for y = log_softmax(x)."""
    grad = opmath(grad_output)
    return (grad - torch.exp(opmath(output)) * grad.sum(dim, keepdim=True)).to(input_dtype)


# --------------------------------------------------------------------------- layer norm

@register_decomposition(aten.native_layer_norm.default)
def native_layer_norm(x, normalized_shape, weight, bias, eps):
    """Normalize over the trailing normalized_shape dims; also return mean and 1/std (rstd)."""
    dims = list(range(x.ndim - len(normalized_shape), x.ndim))
    dtype, x = x.dtype, opmath(x)
    var, mean = var_mean_two_pass(x, dims, correction=0, keepdim=True)
    rstd = torch.rsqrt(var + eps)
    out = (x - mean) * rstd
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    # aten keeps the statistics in float32, except on CPU for an input whose weight and bias have
    # its own low-precision dtype (a bfloat16 input with float32 weights, as autocast makes, gets
    # float32 statistics there too)
    stats_dtype = dtype if x.device.type == "cpu" and not _mixed_dtypes(dtype, weight, bias) else x.dtype
    return out.to(dtype), mean.to(stats_dtype), rstd.to(stats_dtype)


def _mixed_dtypes(dtype, weight, bias):
    """A norm's input of ``dtype`` with a weight or bias of another (aten's CPU "mixed type")."""
    return any(p is not None and p.dtype != dtype for p in (weight, bias))


@register_decomposition(aten.native_layer_norm_backward.default)
def native_layer_norm_backward(grad_output, x, normalized_shape, mean, rstd, weight, bias,
                               output_mask):
    """With x̂ = (x - mean) * rstd, N the normalized size and g = dy * weight:
    dx = rstd / N * (N g - sum(g) - x̂ sum(g x̂)); dweight = sum(dy x̂); dbias = sum(dy)."""
    axis = x.ndim - len(normalized_shape)
    inner, outer = list(range(axis, x.ndim)), list(range(axis))
    n = math.prod(normalized_shape)
    grad, x_hat = opmath(grad_output), (opmath(x) - opmath(mean)) * opmath(rstd)
    grad_input = grad_weight = grad_bias = None
    if output_mask[0]:
        g = grad * weight if weight is not None else grad
        inner_terms = n * g - g.sum(inner, keepdim=True) - x_hat * (g * x_hat).sum(inner, keepdim=True)
        grad_input = (opmath(rstd) / n * inner_terms).to(x.dtype)
    if output_mask[1] and weight is not None:
        grad_weight = _sum_over(grad * x_hat, outer).to(weight.dtype)
    if output_mask[2] and bias is not None:
        grad_bias = _sum_over(grad, outer).to(bias.dtype)
    return grad_input, grad_weight, grad_bias


def _sum_over(t, dims):
    """t summed over dims; none when dims is empty (sum([]) would reduce every dim, aten's rule)."""
    return t.sum(dims) if dims else t


# --------------------------------------------------------------------------- batch norm

def _per_channel(t, ndim):
    """A [C] tensor shaped [1, C, 1, ...] to broadcast against an [N, C, ...] input."""
    return t.reshape([1, -1] + [1] * (ndim - 2))


def _batch_norm(x, weight, bias, running_mean, running_var, training, momentum, eps):
    """Returns (out, save_mean, save_invstd, new_running_mean, new_running_var)."""
    dims = [0, *range(2, x.ndim)]
    params = [t for t in (weight, bias, running_mean, running_var) if t is not None]
    stats_dtype = params[0].dtype if params else x.dtype  # aten's "mixed type" rule on CPU
    xf = opmath(x)
    if training:
        var, mean = var_mean_two_pass(xf, dims, correction=0, keepdim=False)
        invstd = torch.rsqrt(var + eps)
        count = x.numel() // x.shape[1]
        if running_mean is not None:
            unbiased_var = var * (count / (count - 1))
            running_mean = (momentum * mean + (1 - momentum) * running_mean).to(running_mean.dtype)
            running_var = (momentum * unbiased_var + (1 - momentum) * running_var).to(running_var.dtype)
    else:
        if running_mean is None:
            raise DecompositionError("batch norm in eval mode needs running_mean and running_var")
        mean, invstd = opmath(running_mean), 1 / torch.sqrt(opmath(running_var) + eps)
    out = (xf - _per_channel(mean, x.ndim)) * _per_channel(invstd, x.ndim)
    if weight is not None:
        out = out * _per_channel(weight, x.ndim)
    if bias is not None:
        out = out + _per_channel(bias, x.ndim)
    save_mean, save_invstd = mean.to(stats_dtype), invstd.to(stats_dtype)
    if not training and x.device.type == "cpu":  # CPU returns empty saved stats in eval mode
        save_mean = save_invstd = x.new_zeros([0])
    return out.to(x.dtype), save_mean, save_invstd, running_mean, running_var


@register_decomposition(aten.native_batch_norm.default)
def native_batch_norm(x, weight, bias, running_mean, running_var, training, momentum, eps):
    if training and running_mean is not None:
        raise DecompositionError(
            "aten.native_batch_norm in training mode updates running_mean/running_var in place; "
            "functionalize it to aten._native_batch_norm_legit_functional first")
    return _batch_norm(x, weight, bias, running_mean, running_var, training, momentum, eps)[:3]


@register_decomposition(aten._native_batch_norm_legit_functional.default)
def native_batch_norm_functional(x, weight, bias, running_mean, running_var, training, momentum, eps):
    """The functional batch norm: the updated running statistics are extra outputs."""
    return _batch_norm(x, weight, bias, running_mean, running_var, training, momentum, eps)


@register_decomposition(aten._native_batch_norm_legit_no_training.default)
def native_batch_norm_eval(x, weight, bias, running_mean, running_var, momentum, eps):
    return _batch_norm(x, weight, bias, running_mean, running_var, False, momentum, eps)[:3]


@register_decomposition(aten._native_batch_norm_legit.no_stats)
def native_batch_norm_no_stats(x, weight, bias, training, momentum, eps):
    return _batch_norm(x, weight, bias, None, None, True, momentum, eps)[:3]


@register_decomposition(aten.native_batch_norm_backward.default)
def native_batch_norm_backward(grad_output, x, weight, running_mean, running_var, save_mean,
                               save_invstd, train, eps, output_mask):
    """With x̂ = (x - mean) * invstd over the N elements of each channel:
    training: dx = (dy - mean(dy) - x̂ mean(dy x̂)) * invstd * weight; eval: dx = dy * invstd * weight;
    dweight = sum(dy x̂); dbias = sum(dy)."""
    dims = [0, *range(2, x.ndim)]
    if train:
        mean, invstd = opmath(save_mean), opmath(save_invstd)
    else:
        mean, invstd = opmath(running_mean), 1 / torch.sqrt(opmath(running_var) + eps)
    grad, centered = opmath(grad_output), opmath(x) - _per_channel(mean, x.ndim)
    count = x.numel() // x.shape[1]
    grad_sum = grad.sum(dims)
    dot = (grad * centered).sum(dims)  # sum(dy x̂) / invstd
    scale = invstd if weight is None else invstd * opmath(weight)
    grad_input = grad_weight = grad_bias = None
    if output_mask[0]:
        if train:
            projection = centered * _per_channel(dot * invstd * invstd / count, x.ndim)
            grad = grad - projection - _per_channel(grad_sum / count, x.ndim)
        grad_input = (grad * _per_channel(scale, x.ndim)).to(x.dtype)
    if output_mask[1]:
        grad_weight = (dot * invstd).to(weight.dtype if weight is not None else x.dtype)
    if output_mask[2]:
        grad_bias = grad_sum.to(weight.dtype if weight is not None else x.dtype)
    return grad_input, grad_weight, grad_bias


# --------------------------------------------------------------------------- losses

REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _reduce_loss(losses, reduction):
    if REDUCTIONS[reduction] == "mean":
        return losses.mean()
    return losses.sum() if REDUCTIONS[reduction] == "sum" else losses


@register_decomposition(aten.mse_loss.default)
def mse_loss(x, target, reduction=1):
    dtype, diff = x.dtype, opmath(x) - opmath(target)
    return _reduce_loss(diff * diff, reduction).to(dtype)


@register_decomposition(aten.mse_loss_backward.default)
def mse_loss_backward(grad_output, x, target, reduction):
    norm = 2 / x.numel() if REDUCTIONS[reduction] == "mean" else 2
    return ((opmath(x) - opmath(target)) * norm * opmath(grad_output)).to(x.dtype)


def _nll_weights(x, target, weight, ignore_index):
    """(target with ignored entries set to class 0, the weight of each sample: 0 if ignored)."""
    keep = target != ignore_index
    safe_target = torch.where(keep, target, 0)
    sample_weight = keep.to(opmath_dtype(x.dtype))
    if weight is not None:
        sample_weight = sample_weight * opmath(weight).gather(0, safe_target.reshape(-1)).reshape(target.shape)
    return safe_target, sample_weight


def _check_nll_input(x):
    if x.ndim > 2:
        raise DecompositionDeclined("nll_loss on inputs with more than 2 dims (nll_loss2d) is not supported")


@register_decomposition(aten.nll_loss_forward.default)
def nll_loss_forward(x, target, weight, reduction, ignore_index):
    """loss_i = -weight[t_i] * x[i, t_i]; mean divides the sum by the total weight.
    Returns (output, total_weight)."""
    _check_nll_input(x)
    safe_target, sample_weight = _nll_weights(x, target, weight, ignore_index)
    picked = opmath(x).gather(-1, safe_target.unsqueeze(-1)).squeeze(-1)
    losses = -picked * sample_weight
    total_weight = sample_weight.sum()
    if REDUCTIONS[reduction] == "none":
        return losses.to(x.dtype), x.new_zeros([])
    output = losses.sum()
    if REDUCTIONS[reduction] == "mean":
        output = output / total_weight
    return output.to(x.dtype), total_weight.to(x.dtype)


@register_decomposition(aten.nll_loss_backward.default)
def nll_loss_backward(grad_output, x, target, weight, reduction, ignore_index, total_weight):
    """dx[i, c] = -weight[t_i] * dy_i where c == t_i (dy / total_weight for mean), else 0."""
    _check_nll_input(x)
    safe_target, sample_weight = _nll_weights(x, target, weight, ignore_index)
    grad = opmath(grad_output)
    if REDUCTIONS[reduction] == "mean":
        grad = grad / opmath(total_weight)
    per_sample = (-sample_weight * grad).unsqueeze(-1)
    classes = prims.iota(x.shape[-1], start=0, step=1, dtype=torch.int64, device=x.device)
    is_target = classes == safe_target.unsqueeze(-1)  # a one-hot [N, C] mask
    return torch.where(is_target, per_sample, 0).to(x.dtype)


# --------------------------------------------------------------------------- pooling

def _pair(value):
    value = list(value) if isinstance(value, (list, tuple)) else [value]
    return value * 2 if len(value) == 1 else value


def _pool_output_size(size, kernel, stride, padding, dilation, ceil_mode):
    """aten's pooling output size; in ceil mode the last window must start inside the input
    or its left padding."""
    span = dilation * (kernel - 1) + 1
    out = (size + 2 * padding - span + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + padding:
        out -= 1
    return out


class PoolGeometry:
    """Sizes of a 2-d pooling over the last two dims of x: kernel, stride, padding, dilation
    and the output size, each as [height, width]."""

    def __init__(self, x, kernel_size, stride, padding, dilation, ceil_mode):
        if x.ndim not in (3, 4):
            raise DecompositionDeclined(f"2-d pooling of a {x.ndim}-d input is not supported")
        self.input = list(x.shape[-2:])
        self.kernel = _pair(kernel_size)
        self.stride = _pair(stride) if stride else self.kernel
        self.padding, self.dilation = _pair(padding), _pair(dilation)
        self.output = [_pool_output_size(*args, ceil_mode) for args in zip(
            self.input, self.kernel, self.stride, self.padding, self.dilation)]

    def offsets(self):
        """Kernel positions (i, j), row by row, as aten visits them."""
        return [(i, j) for i in range(self.kernel[0]) for j in range(self.kernel[1])]

    def positions(self, d, k, device):
        """Input coordinate along dim d (0: rows, 1: cols) read by kernel position k, for each
        output position: o * stride - padding + k * dilation, an int64 [output[d]] tensor."""
        return prims.iota(self.output[d], start=k * self.dilation[d] - self.padding[d],
                          step=self.stride[d], dtype=torch.int64, device=device)

    def padding_after(self, d):
        """Padding after the input along dim d: as much as the last window reaches past it."""
        span = (self.output[d] - 1) * self.stride[d] + self.dilation[d] * (self.kernel[d] - 1) + 1
        return max(0, span - self.input[d] - self.padding[d])

    def one_window_over_input(self):
        """A single window, unpadded, that covers the whole input (EfficientNet's
        AvgPool2d(320, ceil_mode=True) on a 1x1 map): a reduction, not kernel-many terms."""
        covers_input = all(k >= n for k, n in zip(self.kernel, self.input))
        return self.output == [1, 1] and covers_input and self.padding == [0, 0]

    def padded_size(self):
        return [self.input[d] + self.padding[d] + self.padding_after(d) for d in (0, 1)]

    def padded_input(self, x, value):
        """x padded by `padding` before and by padding_after after (last dim listed first)."""
        pad = [self.padding[1], self.padding_after(1), self.padding[0], self.padding_after(0)]
        return aten.constant_pad_nd.default(x, pad, value)

    def windows(self, x, pad_value):
        """For each kernel position (i, j): the [N, C, OH, OW] tensor of the input elements it
        reads for every output position (pad_value outside the input)."""
        padded = self.padded_input(x, pad_value)
        lead = list(x.shape[:-2])
        for i, j in self.offsets():
            starts = [0] * len(lead) + [i * self.dilation[0], j * self.dilation[1]]
            limits = lead + [s + (o - 1) * st + 1 for s, o, st in zip(starts[-2:], self.output, self.stride)]
            yield (i, j), prims.slice(padded, starts, limits, [1] * len(lead) + self.stride)


def _lowest(dtype):
    return -math.inf if dtype.is_floating_point else torch.iinfo(dtype).min


@register_decomposition(aten.max_pool2d_with_indices.default)
def max_pool2d_with_indices(x, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """Max over each window, and the index (h * W + w) of the element chosen.

    Like aten's loop: the first element inside the input is taken, then any later one that is
    larger or nan; padding is never chosen.
    """
    geometry = PoolGeometry(x, kernel_size, stride, padding, dilation, ceil_mode)
    height, width = geometry.input
    best = x.new_full([*x.shape[:-2], *geometry.output], _lowest(x.dtype))
    best_index = x.new_zeros(best.shape, dtype=torch.int64)
    seen = x.new_zeros(geometry.output, dtype=torch.bool)
    for (i, j), window in geometry.windows(x, _lowest(x.dtype)):
        rows, cols = geometry.positions(0, i, x.device), geometry.positions(1, j, x.device)
        inside = (((rows >= 0) & (rows < height)).unsqueeze(1)
                  & ((cols >= 0) & (cols < width)).unsqueeze(0))
        flat_index = rows.unsqueeze(1) * width + cols.unsqueeze(0)
        take = inside & (~seen | (window > best) | torch.isnan(window))
        best = torch.where(take, window, best)
        best_index = torch.where(take, flat_index, best_index)
        seen = seen | inside
    return best, best_index


@register_decomposition(aten.max_pool2d_with_indices_backward.default)
def max_pool2d_with_indices_backward(grad_output, x, kernel_size, stride, padding, dilation,
                                     ceil_mode, indices):
    """Each output's gradient goes to the input element its index names (scatter-add)."""
    lead, spatial = list(x.shape[:-2]), math.prod(x.shape[-2:])
    grad = opmath(grad_output).reshape(lead + [-1])
    grad_input = grad.new_zeros(lead + [spatial]).scatter_add(-1, indices.reshape(lead + [-1]), grad)
    return grad_input.reshape(x.shape).to(x.dtype)


def _avg_pool_divisor(geometry, count_include_pad, device):
    """The [OH, OW] divisor of each window: its size clipped to the padded input, or, without
    count_include_pad, the number of its elements inside the input."""
    counts = []
    for d in (0, 1):
        start = geometry.positions(d, 0, device)
        end = torch.clamp_max(start + geometry.kernel[d], geometry.input[d] + geometry.padding[d])
        if count_include_pad:
            counts.append(end - start)
        else:
            counts.append(torch.clamp_max(end, geometry.input[d]) - torch.clamp_min(start, 0))
    return counts[0].unsqueeze(1) * counts[1].unsqueeze(0)


@register_decomposition(aten.avg_pool2d.default)
def avg_pool2d(x, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    geometry = PoolGeometry(x, kernel_size, stride, padding, 1, ceil_mode)
    if geometry.one_window_over_input():
        total = opmath(x).sum([-2, -1], keepdim=True)
    else:
        total = _pairwise_sum([window for _, window in geometry.windows(opmath(x), 0)])
    divisor = divisor_override or _avg_pool_divisor(geometry, count_include_pad, x.device)
    return (total / divisor).to(x.dtype)


def _pairwise_sum(terms):
    """The sum of a list of tensors as a balanced tree of adds: a 24x24 window is 576 terms, and a
    chain of 576 adds would be an expression 576 deep for the loop IR."""
    while len(terms) > 1:
        terms = [a + b for a, b in zip(terms[::2], terms[1::2])] + terms[len(terms) - len(terms) % 2:]
    return terms[0]


@register_decomposition(aten.avg_pool2d_backward.default)
def avg_pool2d_backward(grad_output, x, kernel_size, stride, padding, ceil_mode, count_include_pad,
                        divisor_override):
    """Each output's gradient / divisor is added to every element of its window: one scatter-add
    into the padded input (all kernel positions at once), then the padding is cut off."""
    geometry = PoolGeometry(x, kernel_size, stride, padding, 1, ceil_mode)
    divisor = divisor_override or _avg_pool_divisor(geometry, count_include_pad, x.device)
    grad = opmath(grad_output) / divisor
    if geometry.one_window_over_input():
        return grad.expand(x.shape).to(x.dtype)
    lead = list(x.shape[:-2])
    padded_height, padded_width = geometry.padded_size()
    targets = []
    for i, j in geometry.offsets():
        rows = geometry.positions(0, i, x.device) + geometry.padding[0]
        cols = geometry.positions(1, j, x.device) + geometry.padding[1]
        targets.append((rows.unsqueeze(1) * padded_width + cols.unsqueeze(0)).reshape(-1))
    index = torch.cat(targets).expand(lead + [-1])
    values = torch.cat([grad.reshape(lead + [-1])] * len(targets), dim=-1)
    padded = grad.new_zeros(lead + [padded_height * padded_width]).scatter_add(-1, index, values)
    padded = padded.reshape(lead + [padded_height, padded_width])
    height, width = geometry.input
    top, left = geometry.padding
    return padded[..., top:top + height, left:left + width].to(x.dtype)


# --------------------------------------------------------------------------- embedding

@register_decomposition(aten.embedding.default)
def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """Rows of weight picked by indices: shape indices.shape + [embedding_dim]."""
    if weight.ndim != 2:
        raise DecompositionError("embedding weight must be 2-d")
    rows = weight.index_select(0, indices.reshape(-1))
    return rows.reshape([*indices.shape, weight.shape[1]])


@register_decomposition(aten.embedding_dense_backward.default)
def embedding_dense_backward(grad_output, indices, num_weights, padding_idx, scale_grad_by_freq):
    """Row r of the weight gradient is the sum of the output gradients of every lookup of r
    (except lookups of padding_idx), divided by the number of lookups if scale_grad_by_freq."""
    dim = grad_output.shape[-1]
    index = indices.reshape(-1)
    grad = opmath(grad_output).reshape(-1, dim)
    grad = torch.where((index == padding_idx).unsqueeze(1), 0, grad)
    if scale_grad_by_freq:
        counts = grad.new_zeros([num_weights]).scatter_add(0, index, torch.ones_like(grad[:, 0]))
        grad = grad / counts.index_select(0, index).unsqueeze(1)
    grad_weight = grad.new_zeros([num_weights, dim]).scatter_add(0, index.unsqueeze(1).expand(-1, dim), grad)
    return grad_weight.to(grad_output.dtype)


# --------------------------------------------------------------------------- dropout

@register_decomposition(aten.native_dropout.default)
def native_dropout(x, p, train):
    """Zero each element with probability p and scale the others by 1 / (1 - p).
    Returns (output, keep mask). The mask comes from prims.uniform, so it differs from eager's."""
    if train is False:
        return x.clone(), torch.ones_like(x, dtype=torch.bool)
    keep = torch.rand_like(x) < 1 - p
    scale = 1 / (1 - p) if p < 1 else 0.0
    return x * keep * scale, keep


@register_decomposition(aten.native_dropout_backward.default)
def native_dropout_backward(grad_output, mask, scale):
    return grad_output * (mask.to(grad_output.dtype) * scale)


# --------------------------------------------------------------------------- group norm

@register_decomposition(aten.native_group_norm.default)
def native_group_norm(x, weight, bias, n, c, hxw, group, eps):
    """Normalize each group of c / group channels of each sample (with its spatial positions);
    also return mean and rstd, of shape [n, group]."""
    dtype, grouped = x.dtype, opmath(x).reshape(n, group, -1)
    var, mean = var_mean_two_pass(grouped, [2], correction=0, keepdim=True)
    rstd = torch.rsqrt(var + eps)
    out = ((grouped - mean) * rstd).reshape(x.shape)
    if weight is not None:
        out = out * _per_channel(weight, x.ndim)
    if bias is not None:
        out = out + _per_channel(bias, x.ndim)
    stats_dtype = grouped.dtype if x.device.type == "cpu" and _mixed_dtypes(dtype, weight, bias) else dtype
    return out.to(dtype), mean.reshape(n, group).to(stats_dtype), rstd.reshape(n, group).to(stats_dtype)


@register_decomposition(aten.native_group_norm_backward.default)
def native_group_norm_backward(grad_output, x, mean, rstd, weight, n, c, hxw, group, output_mask):
    """Layer norm's backward within each group (x̂ = (x - mean) rstd, g = dy weight):
    dx = rstd (g - mean(g) - x̂ mean(g x̂)); dweight = sum(dy x̂); dbias = sum(dy), per channel."""
    grad = opmath(grad_output)
    x_hat = (opmath(x).reshape(n, group, -1) - opmath(mean).reshape(n, group, 1)) * opmath(rstd).reshape(n, group, 1)
    x_hat = x_hat.reshape(x.shape)
    not_channel = [d for d in range(x.ndim) if d != 1]
    grad_input = grad_weight = grad_bias = None
    if output_mask[0]:
        g = (grad * _per_channel(weight, x.ndim) if weight is not None else grad).reshape(n, group, -1)
        grouped_hat = x_hat.reshape(n, group, -1)
        inner = g - g.mean(2, keepdim=True) - grouped_hat * (g * grouped_hat).mean(2, keepdim=True)
        grad_input = (opmath(rstd).reshape(n, group, 1) * inner).reshape(x.shape).to(x.dtype)
    if output_mask[1] and weight is not None:
        grad_weight = (grad * x_hat).sum(not_channel).to(weight.dtype)
    if output_mask[2]:
        grad_bias = grad.sum(not_channel).to(weight.dtype if weight is not None else grad_output.dtype)
    return grad_input, grad_weight, grad_bias


# --------------------------------------------------------------------------- vector norm

@register_decomposition(aten.linalg_vector_norm.default)
def linalg_vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """(sum |x|^ord)^(1/ord) over dim, with the limits ord = 0 (a count), inf and -inf."""
    if x.dtype.is_complex:
        raise DecompositionDeclined("linalg_vector_norm of complex tensors is not supported")
    x = x.to(dtype) if dtype is not None else x
    result_dtype, magnitude = x.dtype, torch.abs(opmath(x))
    dims = list(range(x.ndim)) if dim is None or dim == [] else dim
    if ord == math.inf:
        norm = magnitude.amax(dims, keepdim=keepdim)
    elif ord == -math.inf:
        norm = magnitude.amin(dims, keepdim=keepdim)
    elif ord == 0:
        norm = (magnitude != 0).to(magnitude.dtype).sum(dims, keepdim=keepdim)
    elif ord == 1:
        norm = magnitude.sum(dims, keepdim=keepdim)
    elif ord == 2:
        norm = torch.sqrt((magnitude * magnitude).sum(dims, keepdim=keepdim))
    else:
        norm = torch.pow(torch.pow(magnitude, ord).sum(dims, keepdim=keepdim), 1.0 / ord)
    return norm.to(result_dtype)


# --------------------------------------------------------------------------- view backwards

@register_decomposition(aten.slice_backward.default)
def slice_backward(grad_output, input_sizes, dim, start, end, step):
    """The gradient of x[start:end:step] (along dim): zeros with grad_output in the slice."""
    zeros = prims.full(list(input_sizes), 0, dtype=grad_output.dtype, device=grad_output.device)
    return slice_scatter(zeros, grad_output, dim, start, end, step)


@register_decomposition(aten.select_backward.default)
def select_backward(grad_output, input_sizes, dim, index):
    zeros = prims.full(list(input_sizes), 0, dtype=grad_output.dtype, device=grad_output.device)
    return select_scatter(zeros, grad_output, dim, index)
