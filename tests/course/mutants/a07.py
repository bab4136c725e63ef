"""Plausible mistakes in a07_decompositions: each must cost points with a message naming the case."""
from tinydynamo.course.checking import Mutant

ASSIGNMENT = "a07_decompositions"

SOFTMAX_DOC = '    """aten._softmax.default: exp(x - max) / sum(exp(x - max)) along dim."""\n'
LAYER_NORM_DOC = '    """aten.native_layer_norm.default: (out, mean, rstd)."""\n'

MUTANTS = [
    Mutant("softmax: delegates to the reference decomposition", SOFTMAX_DOC,
           SOFTMAX_DOC + "    from tinydynamo.prims import decompositions\n"
           "    return decompositions.softmax(x, dim, half_to_float)\n",
           "tinydynamo.prims.decompositions.softmax", zero=("test_softmax", "test_softmax_extra")),
    Mutant("native_layer_norm: hands over the reference decomposition itself",
           "def native_layer_norm(x, normalized_shape, weight, bias, eps):",
           "from tinydynamo.prims.decompositions import native_layer_norm\n\n\n"
           "def _mine(x, normalized_shape, weight, bias, eps):",
           "is the reference's own tinydynamo.prims.decompositions.native_layer_norm",
           zero=("test_layer_norm", "test_layer_norm_extra")),
    Mutant("native_layer_norm: one-pass variance, E[x^2] - E[x]^2 (chapter 7 shows why not)",
           "    var = prims.div(prims.sum(prims.mul(centered, centered), inner), n)\n",
           "    mean_sq = prims.div(prims.sum(prims.mul(xf, xf), inner), n)\n"
           "    var = prims.sub(mean_sq, prims.mul(mean, mean))\n",
           "native_layer_norm"),
    Mutant("native_layer_norm: copies chapter 7's call of refs.var_mean_two_pass",
           "    var = prims.div(prims.sum(prims.mul(centered, centered), inner), n)\n",
           "    from tinydynamo.prims.refs import var_mean_two_pass  # as chapter 7 shows it\n"
           "    var, _ = var_mean_two_pass(xf, inner, 0, False)\n",
           "var_mean_two_pass", zero=("test_layer_norm", "test_layer_norm_extra")),
    Mutant("relu: written with a torch function", "    return prims.maximum(x, 0)\n",
           "    return torch.clamp_min(x, 0)\n", "aten.relu.default"),
    Mutant("sigmoid: computes in the input dtype (bfloat16 loses precision)",
           "    x = convert(x, opmath_dtype(dtype))\n", "    x = convert(x, dtype)\n",
           "aten.sigmoid.default"),
    Mutant("sigmoid: integers stay integers", 
           "dtype = x.dtype if x.dtype.is_floating_point else torch.get_default_dtype()",
           "dtype = x.dtype", "aten.sigmoid.default"),
    Mutant("broadcast_to: aligns leading dims instead of trailing ones",
           "list(range(first, len(shape)))", "list(range(x.ndim))", "aten.addcmul.default"),
    Mutant("addcmul: promotes without 0-d rules (torch.promote_types of all three)",
           "dtype = result_type(self, tensor1, tensor2)",
           "dtype = torch.promote_types(torch.promote_types(self.dtype, tensor1.dtype), tensor2.dtype)",
           "aten.addcmul.default"),
    Mutant("addcmul: forgets value", "prims.mul(prims.mul(b, value), c)", "prims.mul(b, c)",
           "aten.addcmul.default"),
    Mutant("softmax: without subtracting the max",
           "        x = prims.sub(x, prims.broadcast_in_dim(prims.amax(x, dims), shape, kept))\n",
           "        pass\n", "aten._softmax.default"),
    Mutant("softmax: ignores half_to_float", "out_dtype = torch.float32 if half_to_float else x.dtype",
           "out_dtype = x.dtype", "aten._softmax.default"),
    Mutant("softmax: sums bfloat16/float16 in their own dtype",
           "    x = convert(x, opmath_dtype(x.dtype))\n    dims = [dim % x.ndim] if x.ndim else []\n",
           "    dims = [dim % x.ndim] if x.ndim else []\n", "aten._softmax.default"),
    Mutant("softmax_backward: forgets the sum over dim",
           "    return convert(prims.sub(dy_y, prims.mul(y, total)), input_dtype)\n",
           "    return convert(prims.sub(dy_y, prims.mul(y, dy)), input_dtype)\n",
           "aten._softmax_backward_data.default"),
    Mutant("native_layer_norm: eps outside the square root",
           "rstd = prims.rsqrt(prims.add(var, eps))", "rstd = prims.add(prims.rsqrt(var), eps)",
           "native_layer_norm"),
    Mutant("native_layer_norm: mean and rstd keep the normalized dims dropped",
           "    mean, rstd = (prims.reshape(convert(t, x.dtype), stats_shape) for t in (mean, rstd))\n",
           "    mean, rstd = (convert(t, x.dtype) for t in (mean, rstd))\n", "native_layer_norm"),
    Mutant("native_layer_norm_backward: grad_weight without x_hat",
           "grad_weight = convert(prims.sum(prims.mul(dy, x_hat), outer), weight.dtype)",
           "grad_weight = convert(prims.sum(dy, outer), weight.dtype)", "native_layer_norm_backward"),
    Mutant("native_layer_norm_backward: ignores output_mask for grad_input",
           "    if output_mask[0]:\n", "    if True:\n", "native_layer_norm_backward"),
]
