"""Plausible mistakes in a09_triton_reductions: each must cost points with a message naming the case."""
from tinydynamo.course.checking import Mutant

ASSIGNMENT = "a09_triton_reductions"

PERSISTENT_DOC = '    """The code of a reduction whose whole row is one tile; returns its [XBLOCK, 1] result."""\n'

IDENTITY_DOC = '    """The value a reduction of values of ``dtype`` starts from, as Triton source."""\n'
LOOPED_FOLD = ('        if rtype == "sum":\n            kernel.writeline(f"{acc} = {acc} + {tile}")\n'
               '        elif rtype == "prod":\n            kernel.writeline(f"{acc} = {acc} * {tile}")\n')

MUTANTS = [
    Mutant("persistent: delegates to the reference's codegen_reduction", PERSISTENT_DOC,
           PERSISTENT_DOC + "    from tinydynamo.inductor.codegen import triton\n"
           "    return triton.codegen_reduction(kernel, body)\n",
           "the reference's own answer", zero=("test_persistent", "test_persistent_extra")),
    Mutant("identity: hands over the reference's own function",
           "def reduction_identity(reduction_type, dtype):",
           "from tinydynamo.inductor.codegen.triton import reduction_identity\n\n\n"
           "def _my_identity(reduction_type, dtype):",
           "is the reference's own reduction_identity", zero=("test_identity", "test_identity_extra")),
    Mutant("persistent: copies the chapter's kernel, tl.max for floats (skips nans)",
           '        kernel.use_helper(f"{rtype}_propagate_nan")\n        expr = f"{rtype}_propagate_nan({tile}, 1)"',
           '        expr = f"tl.{rtype}({tile}, 1)"', "nan"),
    Mutant("identity: 0 for the max of floats", "return 'float(\"inf\")' if largest else 'float(\"-inf\")'",
           "return 'float(\"inf\")' if largest else '0'", "max"),
    Mutant("identity: int32 extremes for every integer dtype", "info = torch.iinfo(dtype)",
           "info = torch.iinfo(torch.int32)", "int64"),
    Mutant("identity: bools start max from 1", 'return "1" if largest else "0"', 'return "1"', "b8"),
    Mutant("reduction_input: no identity past the row's end (the loads' zeros are reduced)",
           'f"tl.where({kernel.rmask(body)}, {value}, {identity})"', 'f"{value} + 0"', "max"),
    Mutant("reduce_tile: integer results keep the accumulator's type",
           '    elif not floating:\n        result = f"{result}.to({triton_type(body.dtype)})"\n', "",
           "int8 max fused with arithmetic"),
    Mutant("looped: the accumulator is overwritten, not accumulated, by a sum",
           'kernel.writeline(f"{acc} = {acc} + {tile}")', 'kernel.writeline(f"{acc} = {tile}")', "looped"),
    Mutant("looped: max and min helpers swapped",
           'helper = "maximum" if rtype == "max" else "minimum"', 'helper = "minimum" if rtype == "max" else "maximum"',
           "looped"),
    Mutant("arg (looped): updates the index only, never the best value",
           'kernel.writeline(f"{acc}, {acc}_index = {rtype}_update({acc}, {acc}_index, {tile}, "\n'
           '                             f"{kernel.rindex_int64()})")',
           'kernel.writeline(f"{acc}_index = tl.where({tile} == {acc}, {kernel.rindex_int64()}, {acc}_index)")',
           "looped"),
    Mutant("arg: tl.argmax instead of the first-max helper (persistent)",
           'return kernel.new_var(f"{rtype}_first({values}, {indices}, 1)[:, None]", torch.int64, {"x"})',
           'return kernel.new_var(f"tl.{rtype}({values}, 1)[:, None].to(tl.int64)", torch.int64, {"x"})',
           "arg"),
    Mutant("looped: the accumulator starts from 0, not the identity",
           'kernel.writeline(f"{acc} = tl.full([XBLOCK, RBLOCK], {reduction_identity(rtype, body.src_dtype)}, {acc_type})")\n    with kernel.reduction_loop(body):\n        tile',
           'kernel.writeline(f"{acc} = tl.full([XBLOCK, RBLOCK], 0, {acc_type})")\n    with kernel.reduction_loop(body):\n        tile',
           "looped"),
    Mutant("looped: tl.maximum/tl.minimum fold the chunks (a nan of an early chunk is lost)",
           'kernel.use_helper(helper)\n            kernel.writeline(f"{acc} = {helper}({acc}, {tile})")',
           'kernel.writeline(f"{acc} = tl.{helper}({tile}, {acc})")',
           "nan"),
    Mutant("reduce_tile: sums along axis 0 (the rows of the program), not along the row",
           'expr = f"tl.sum({tile}, 1)"', 'expr = f"tl.sum({tile}, 0)"', "sum"),
    # played as a learner (second round)
    Mutant("identity: the largest finite float instead of infinity",
           "        return 'float(\"inf\")' if largest else 'float(\"-inf\")'",
           "        info = torch.finfo(dtype)\n        return repr(info.max if largest else info.min)",
           "a row of -inf"),
    Mutant("identity: uint8 gets int8's range", "    info = torch.iinfo(dtype)",
           "    info = torch.iinfo(torch.int8 if dtype == torch.uint8 else dtype)", "u8"),
    Mutant("reduce_tile: min of floats with tl.min (skips nans)",
           '    elif floating:\n        kernel.use_helper(f"{rtype}_propagate_nan")',
           '    elif floating and rtype == "max":\n        kernel.use_helper(f"{rtype}_propagate_nan")', "amin"),
    Mutant("reduce_tile: drops the reduced axis ([XBLOCK], not [XBLOCK, 1])", '    result = f"{expr}[:, None]"',
           '    result = f"{expr}"', "failed"),
    Mutant("looped: folds max/min with a comparison (a nan in the accumulator is lost)",
           '            kernel.writeline(f"{acc} = {helper}({acc}, {tile})")',
           '            op = ">" if rtype == "max" else "<"\n'
           '            kernel.writeline(f"{acc} = tl.where({acc} {op} {tile}, {acc}, {tile})")', "nan"),
    Mutant("looped: masks the accumulator again after the loop (the last chunk's mask)",
           '    return reduce_tile(kernel, body, TritonCSEVariable(acc, body.src_dtype, {"x", "r"}))',
           '    identity = reduction_identity(rtype, body.src_dtype)\n'
           '    masked = kernel.new_var(f"tl.where({kernel.rmask(body)}, {acc}, {identity})", body.src_dtype, {"x", "r"})\n'
           '    return reduce_tile(kernel, body, masked)', "looped"),
    Mutant("identity: sum starts from 0.0 for every dtype", '        return "0"\n    if reduction_type == "prod"',
           '        return "0.0"\n    if reduction_type == "prod"', "sum of large int64 values"),
    Mutant("reduction_input: no ensure_tensor (a constant stays a literal)",
           "value = kernel.ensure_tensor(kernel.compute(body))", "value = kernel.compute(body)", "float64 constant row"),
    Mutant("reduce_tile: nan-propagating helpers for float32 only",
           '    elif floating:\n        kernel.use_helper(f"{rtype}_propagate_nan")',
           '    elif floating and body.src_dtype == torch.float32:\n        kernel.use_helper(f"{rtype}_propagate_nan")',
           "amax and amin with nan f64"),
    Mutant("arg (looped): the value accumulator starts from 0",
           'kernel.writeline(f"{acc} = tl.full([XBLOCK, RBLOCK], {reduction_identity(rtype, body.src_dtype)}, {acc_type})")\n'
           '        kernel.writeline(f"{acc}_index',
           'kernel.writeline(f"{acc} = tl.full([XBLOCK, RBLOCK], 0, {acc_type})")\n        kernel.writeline(f"{acc}_index',
           "argmax of negative rows, looped"),
    # learner5's round
    # part 1
    Mutant("identity: delegates to torch._inductor's Reduction.default_value", IDENTITY_DOC,
           IDENTITY_DOC + "    import math\n    from torch._inductor.ir import Reduction\n"
           "    value = Reduction.default_value(reduction_type, dtype)\n"
           "    if isinstance(value, float) and math.isinf(value):\n        return f'float(\"{value}\")'\n"
           "    return str(int(value))\n",
           "torch", zero=("test_identity", "test_identity_extra")),
    Mutant("identity: -max() for the smallest integer (one above it)", "    return str(info.max if largest else info.min)\n",
           "    return str(info.max if largest else -info.max)\n", "int64"),
    Mutant("identity: prod starts from 1.0 for every dtype", '    if reduction_type == "prod":\n        return "1"\n',
           '    if reduction_type == "prod":\n        return "1.0"\n', "prod"),
    Mutant("identity: argmax/argmin of floats from the finite extremes",
           "        return 'float(\"inf\")' if largest else 'float(\"-inf\")'\n",
           "        if reduction_type.startswith('arg'):\n            info = torch.finfo(dtype)\n"
           "            return repr(info.max if largest else info.min)\n"
           "        return 'float(\"inf\")' if largest else 'float(\"-inf\")'\n", "-inf"),
    # part 2
    Mutant("reduction_input: a value constant along the row is reduced as it is (no broadcast to the tile)",
           "    identity = reduction_identity(body.reduction_type, body.src_dtype)\n    return kernel.new_var(",
           "    identity = reduction_identity(body.reduction_type, body.src_dtype)\n"
           "    if value.dims == {\"x\"}:\n        return value\n    return kernel.new_var(", "the same along the row"),
    Mutant("reduction_input: zeroes the lanes past the row's end for every reduction",
           'f"tl.where({kernel.rmask(body)}, {value}, {identity})"', 'f"tl.where({kernel.rmask(body)}, {value}, 0)"',
           "max"),
    Mutant("reduce_tile: prod of floats with tl.reduce but of integers with tl.sum (copy-paste)",
           '        kernel.use_helper("multiply")\n        expr = f"tl.reduce({tile}, 1, multiply)"',
           '        kernel.use_helper("multiply")\n        expr = f"tl.reduce({tile}, 1, multiply)" if floating else f"tl.sum({tile}, 1)"',
           "prod"),
    # part 3
    Mutant("looped: reduces each chunk inside the loop (an [XBLOCK, 1] accumulator)",
           '    kernel.writeline(f"{acc} = tl.full([XBLOCK, RBLOCK], {reduction_identity(rtype, body.src_dtype)}, {acc_type})")\n'
           '    with kernel.reduction_loop(body):\n        tile = reduction_input(kernel, body)\n' + LOOPED_FOLD,
           '    kernel.writeline(f"{acc} = tl.full([XBLOCK, 1], {reduction_identity(rtype, body.src_dtype)}, {acc_type})")\n'
           '    with kernel.reduction_loop(body):\n        tile = reduce_tile(kernel, body, reduction_input(kernel, body))\n'
           '        tile = f"{tile}.to({acc_type})"\n' + LOOPED_FOLD,
           "looped"),
    Mutant("looped: the chunk's tile is not masked (the loads' zeros are folded in)",
           "    with kernel.reduction_loop(body):\n        tile = reduction_input(kernel, body)\n        if rtype",
           "    with kernel.reduction_loop(body):\n        tile = kernel.ensure_tensor(kernel.compute(body))\n        if rtype",
           "looped"),
    # part 4
    Mutant("arg (looped): the index of the lane within the chunk, not the position in the row",
           'f"{kernel.rindex_int64()})")', 'f"tl.arange(0, RBLOCK)[None, :].to(tl.int64))")', "looped"),
    Mutant("arg (looped): indices start from -1", 'kernel.writeline(f"{acc}_index = tl.zeros([XBLOCK, RBLOCK], tl.int64)")',
           'kernel.writeline(f"{acc}_index = tl.full([XBLOCK, RBLOCK], -1, tl.int64)")', "looped"),
    Mutant("arg (looped): argmax_update for argmin too",
           '            kernel.use_helper(f"{rtype}_update")\n            tile = reduction_input(kernel, body)\n'
           '            kernel.writeline(f"{acc}, {acc}_index = {rtype}_update(',
           '            kernel.use_helper("argmax_update")\n            tile = reduction_input(kernel, body)\n'
           '            kernel.writeline(f"{acc}, {acc}_index = argmax_update(', "argmin"),
    Mutant("arg (persistent): the positions from tl.arange of the tile, not rindex_int64",
           "        values, indices = reduction_input(kernel, body), kernel.rindex_int64()\n",
           "        values, indices = reduction_input(kernel, body), \"tl.arange(0, RBLOCK)[None, :]\"\n", "arg"),
    Mutant("arg (persistent): no identity past the row's end",
           "        values, indices = reduction_input(kernel, body), kernel.rindex_int64()\n",
           "        values, indices = kernel.ensure_tensor(kernel.compute(body)), kernel.rindex_int64()\n", "arg"),
    Mutant("looped: prod folded with + (copy-paste of the sum)", 'kernel.writeline(f"{acc} = {acc} * {tile}")',
           'kernel.writeline(f"{acc} = {acc} + {tile}")', "prod"),
    Mutant("arg (looped): accumulator and index passed to the update helper in the wrong order",
           '{rtype}_update({acc}, {acc}_index, {tile}, "', '{rtype}_update({acc}_index, {acc}, {tile}, "', "looped"),
]
