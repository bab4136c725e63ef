"""Plausible mistakes in a08_cpp_codegen: each must cost points with a message naming the case."""
from tinydynamo.course.checking import Mutant

ASSIGNMENT = "a08_cpp_codegen"

LOOP_DOC = ('    and the closing brace; ``pragma`` (if given) goes on the line before the loop."""\n')

MUTANTS = [
    # parts 2 and 3: which loop is vectorized or threaded, and the identity of integer max
    Mutant("pointwise: simd on the outermost of the body's own loops", "innermost = k == len(body.inner_vars) - 1",
           "innermost = k == 0", "two loops of its own"),
    Mutant("reduction_pragmas: simd on every reduction loop", '        pragmas[-1] = f"#pragma omp simd {clause}"',
           '        pragmas = [f"#pragma omp simd {clause}"] * len(pragmas)', "two reduction loops"),
    Mutant("reduction_pragmas: threads for every full reduction, however small",
           "if full_reduction and math.prod(v.size for v in body.reduction_vars) >= PARALLEL_MIN_ELEMENTS:",
           "if full_reduction:", "(no threads)"),
    Mutant("reduction_pragmas: threads for a long reduction loop inside the outer loop",
           "if full_reduction and math.prod(v.size for v in body.reduction_vars) >= PARALLEL_MIN_ELEMENTS:",
           "if math.prod(v.size for v in body.reduction_vars) >= PARALLEL_MIN_ELEMENTS:",
           "threads on the outer loop only"),
    Mutant("reduction_pragmas: an arg-reduction's loop vectorized without a clause",
           'if not pragmas or rtype.startswith("arg"):  # the first maximum wins: a serial loop\n        return pragmas',
           'if not pragmas:\n        return pragmas\n    if rtype.startswith("arg"):\n'
           '        return pragmas[:-1] + ["#pragma omp simd"]', "(no simd)"),
    Mutant("reduction_init: -max() for the smallest integer (one above it)",
           "return f\"std::numeric_limits<{ctype}>::{'max' if from_above else 'lowest'}()\"",
           "return f\"{'' if from_above else '-'}std::numeric_limits<{ctype}>::max()\"", "extreme integers"),
    # part 1: float32 stays in float; integer division by zero is an error, as in eager
    Mutant("reciprocal with a double literal", 'return f"{cpp_literal(1, x.dtype)} / {paren(x)}"',
           'return f"1.0 / {paren(x)}"', "float32 math stays in float"),
    Mutant("rsqrt through the double sqrt", 'return f"{cpp_literal(1, x.dtype)} / std::sqrt({x})"',
           'return f"{cpp_literal(1, x.dtype)} / sqrt({x})"', "float32 math stays in float"),
    Mutant("exp in double for every dtype", '        return math_function("exp", x)\n',
           '        return f"exp({x})"\n', "float32 math stays in float"),
    Mutant("integer division by zero gives 0 instead of an error",
           'return f"td_div_trunc<{compute_ctype(a.dtype)}>({a}, {b}, td_error)"',
           'return f"({paren(b)} == 0 ? 0 : {a} / {paren(b)})"', "integer division by zero"),
    Mutant("loop: delegates to the reference CppKernel._loop", LOOP_DOC,
           LOOP_DOC + "    from tinydynamo.inductor.codegen.cpp import CppKernel\n"
           "    with CppKernel._loop(kernel, var, pragma):\n        yield\n    return\n",
           "the reference's own answer", zero=("test_pointwise", "test_pointwise_extra")),
    Mutant("exp: delegates to the reference CppOverrides.exp", "        return math_function(\"exp\", x)\n",
           "        from tinydynamo.inductor.codegen.cpp import CppOverrides\n"
           "        return CppOverrides.exp(x)\n", "the reference's own answer",
           zero=("test_ops", "test_ops_extra")),
    Mutant("reduction_init: hands over the reference's own function",
           "def reduction_init(reduction_type, dtype):",
           "from tinydynamo.inductor.codegen.cpp import reduction_init\n\n\n"
           "def _my_reduction_init(reduction_type, dtype):",
           "is the reference's own reduction_init", zero=("test_reductions", "test_reductions_extra")),
    Mutant("neg: `-x` without parentheses (--2.0f for a negative constant)", 'return f"-{paren(x)}"',
           'return f"-{x}"', "a negated negative constant"),
    Mutant("reduction_pragmas: copies the chapter's printed pragma, accumulator name acc0 included",
           'clause = f"reduction({operator}:{acc})"', 'clause = f"reduction({operator}:acc0)"', "norm_act"),
    Mutant("div: td_div_trunc<int32_t> for every integer type, as for the int32 case",
           'return f"td_div_trunc<{compute_ctype(a.dtype)}>({a}, {b}, td_error)"',
           'return f"td_div_trunc<int32_t>({a}, {b}, td_error)"', "beyond 32 bits"),
    Mutant("maximum: std::max<int> for integers",
           'return f"std::max<{compute_ctype(a.dtype)}>({a}, {b})"', 'return f"std::max<int>({a}, {b})"',
           "beyond 32 bits"),
    Mutant("maximum: std::max for floats (drops nan)",
           '            return f"td_maximum({a}, {b})"', '            return f"std::max({a}, {b})"',
           "nan"),
    Mutant("to_dtype: no rounding to bfloat16 and float16",
           '        return f"{rounding[dtype]}({converted})" if dtype in rounding else converted',
           "        return converted", "rounding error of bfloat16"),
    Mutant("pointwise_body: no #pragma omp simd on the innermost loop",
           'loop(kernel, var, "#pragma omp simd" if innermost else None)', "loop(kernel, var, None)",
           "omp simd"),
    Mutant("pointwise_body: stores at the loop index, not the buffer's layout index",
           "kernel.store(node.name, node.buffer.layout.index(body.index), value)",
           "kernel.store(node.name, body.index[-1], value)", "softmax"),
    Mutant("reduction_init: 0 for max of floats",
           "        return f\"{'' if from_above else '-'}std::numeric_limits<{ctype}>::infinity()\"",
           "        return '0'", "amax of negative rows"),
    Mutant("reduction_pragmas: no parallel pragma for a large full reduction",
           "    if full_reduction and math.prod(v.size for v in body.reduction_vars) >= PARALLEL_MIN_ELEMENTS:",
           "    if False:", "(parallel)"),
    Mutant("combine: argmax keeps the last maximum (>=)",
           "better = f\"{value} {'>' if rtype == 'argmax' else '<'} {acc}\"",
           "better = f\"{value} {'>=' if rtype == 'argmax' else '<='} {acc}\"", "ties"),
    Mutant("combine: the nan flag is not tracked",
           '            kernel.body.writeline(f"{acc}_nan |= ({value} != {value});")\n',
           "            pass\n", "with nan"),
    Mutant("reduction_body: the accumulator is declared outside the reduction's own loops",
           "    with contextlib.ExitStack() as own_loops:\n"
           "        for var in body.inner_vars:\n"
           "            own_loops.enter_context(loop(kernel, var))\n"
           "        kernel.body.writeline(f\"{acc_type} {acc} = {reduction_init(rtype, dtype)};\")\n",
           "    kernel.body.writeline(f\"{acc_type} {acc} = {reduction_init(rtype, dtype)};\")\n"
           "    with contextlib.ExitStack() as own_loops:\n"
           "        for var in body.inner_vars:\n"
           "            own_loops.enter_context(loop(kernel, var))\n",
           "loops of their own"),
    Mutant("reduction_init: lowest() for the max of floats, not -infinity",
           "        return f\"{'' if from_above else '-'}std::numeric_limits<{ctype}>::infinity()\"",
           "        return f\"std::numeric_limits<{ctype}>::{'max' if from_above else 'lowest'}()\"",
           "all -inf row"),
    Mutant("reduction_body: stores the accumulator, not the index, for arg-reductions",
           'result = f"{acc}_index" if rtype.startswith("arg") else acc', "result = acc", "argmax"),
]
