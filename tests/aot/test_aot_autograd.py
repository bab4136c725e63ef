"""aot_autograd end to end: zoo training against eager, and the runtime's eager semantics."""
import copy
import warnings

import pytest
import torch
import torch._dynamo
import torch.nn.functional as F

import tinydynamo
from tinydynamo.aot import aot_eager, min_cut_rematerialization_partition
from tinydynamo.testing.models import ZOO, make, training_step

assert_close = torch.testing.assert_close


class CountingBackend:
    """A torch.compile backend running tinydynamo's aot_eager; counts the graphs it compiles."""

    def __init__(self, partition_fn=None):
        self.partition_fn = partition_fn
        self.graphs = 0

    def __call__(self, gm, example_inputs):
        self.graphs += 1
        return aot_eager(gm, example_inputs, partition_fn=self.partition_fn)


def compile_zoo_model(name, partition_fn=None):
    torch._dynamo.reset()
    model, inputs = make(name)
    backend = CountingBackend(partition_fn)
    return model, torch.compile(model, backend=backend, fullgraph=True), inputs, backend


# ---------------------------------------------------------------- the zoo against eager
@pytest.mark.parametrize(
    "partition_fn", [None, min_cut_rematerialization_partition], ids=["default", "min_cut"]
)
@pytest.mark.parametrize("name", list(ZOO))
def test_zoo_training_step_matches_eager(name, partition_fn):
    eager_model, inputs = make(name)
    model, compiled, _, backend = compile_zoo_model(name, partition_fn)
    loss_fn = ZOO[name].loss
    expected = training_step(eager_model, inputs, loss_fn)
    assert_close(training_step(compiled, inputs, loss_fn), expected)
    assert backend.graphs == 1
    for (param_name, expected), actual in zip(eager_model.named_parameters(), model.parameters()):
        assert actual.grad is not None, param_name
        assert_close(actual.grad, expected.grad, msg=param_name)
    for expected, actual in zip(eager_model.buffers(), model.buffers()):
        assert_close(actual, expected)  # BatchNorm's running statistics and batch counter


def test_compiled_output_comes_from_the_compiled_function():
    _, compiled, inputs, _ = compile_zoo_model("mlp")
    assert "CompiledFunction" in compiled(*inputs).grad_fn.name()


def trajectory(model, inputs, loss_fn, optimizer, steps=20):
    losses = [training_step(model, inputs, loss_fn, optimizer) for _ in range(steps)]
    return torch.stack(losses)


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
@pytest.mark.parametrize("name", ["cnn", "gpt_block"])
def test_20_step_training_trajectory_matches_eager(name, optimizer):
    def make_optimizer(params):
        if optimizer == "sgd":
            return torch.optim.SGD(params, lr=0.05, momentum=0.9)
        return torch.optim.Adam(params, lr=1e-2)

    eager_model, inputs = make(name)
    model, compiled, _, backend = compile_zoo_model(name)
    loss_fn = ZOO[name].loss
    expected = trajectory(eager_model, inputs, loss_fn, make_optimizer(eager_model.parameters()))
    actual = trajectory(compiled, inputs, loss_fn, make_optimizer(model.parameters()))
    assert backend.graphs == 1
    assert not torch.allclose(expected[0], expected[-1])  # the model did train
    assert_close(actual, expected)
    assert_close(model.state_dict(), eager_model.state_dict())


# ---------------------------------------------------------------- runtime semantics
def matmul(x, w):
    return x @ w


def compile_fn(fn, *inputs):
    return aot_eager(torch.fx.symbolic_trace(fn), list(inputs))


def grads_of(fn, inputs, loss):
    """Gradients of loss(fn(*inputs)) w.r.t. the inputs that require grad."""
    out = fn(*inputs)
    wrt = [x for x in inputs if x.requires_grad]
    return torch.autograd.grad(loss(out), wrt)


def leaves(*shapes, requires_grad=True):
    torch.manual_seed(0)
    return [torch.randn(*s, requires_grad=requires_grad) for s in shapes]


def several_outputs(x, w):
    y = x @ w
    return y.sin(), y.argmax(dim=1), y.shape[0], None, y.cos()


def test_several_outputs_non_differentiable_and_non_tensor_outputs():
    x, w = leaves((4, 3), (3, 5))
    fn = compile_fn(several_outputs, x, w)
    out = fn(x, w)
    expected = several_outputs(x, w)
    assert_close(out[0], expected[0])
    assert out[1].dtype == torch.int64 and not out[1].requires_grad
    assert_close(out[1], expected[1])
    assert out[2:4] == (4, None)

    def loss(o):  # uses only the first output: the tangent of the last one is None
        return o[0].sum()

    assert_close(grads_of(fn, [x, w], loss), grads_of(several_outputs, [x, w], loss))


def writes_into_slices(x, index):
    y = x[index] * 2
    y[:, 0] = 0  # its backward reads the gradient through as_strided, and writes it back
    y[1:3, 1:] *= 3
    return y.tanh()


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_writing_into_slices_of_an_intermediate_trains_like_eager(backend):
    x, = leaves((6, 4))
    index = torch.tensor([0, 2, 5, 1])
    compiled = tinydynamo.compile(writes_into_slices, backend=backend)
    assert_close(compiled(x, index), writes_into_slices(x, index))
    loss = lambda out: (out * torch.arange(16.0).reshape(4, 4)).sum()  # noqa: E731
    assert_close(grads_of(compiled, [x, index], loss), grads_of(writes_into_slices, [x, index], loss))


def writes_steps_into_a_transposed_buffer(x):
    h = x.transpose(1, 2) * 2  # as RecurrentGemma's scan: zeros_like keeps the transposed strides
    out = torch.zeros_like(h)
    for t in range(h.shape[1]):
        out[:, t] = h[:, t] * (t + 1)  # the backward reads the gradient through as_strided
    return out.tanh()


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_writing_into_a_transposed_intermediate_trains_like_eager(backend):
    x, = leaves((2, 3, 4))
    compiled = tinydynamo.compile(writes_steps_into_a_transposed_buffer, backend=backend)
    loss = lambda out: (out * torch.arange(24.0).reshape(2, 4, 3)).sum()  # noqa: E731
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="tinydynamo")  # it ran eagerly before
        assert_close(compiled(x), writes_steps_into_a_transposed_buffer(x))
        assert_close(grads_of(compiled, [x], loss), grads_of(writes_steps_into_a_transposed_buffer, [x], loss))


def fills_a_zeros_like_buffer(x):
    out = torch.zeros_like(x)  # Python's binding hands back a detached alias of what the tracer holds
    for t in range(x.shape[1]):
        out[:, t] = x[:, t] * (t + 1)
    return out, out[1:]


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_returning_a_factory_result_that_in_place_writes_made_require_grad_trains_like_eager(backend):
    x, = leaves((3, 4))
    compiled = tinydynamo.compile(fills_a_zeros_like_buffer, backend=backend)
    loss = lambda out: (out[0] * torch.arange(12.0).reshape(3, 4)).sum() + out[1].sum()  # noqa: E731
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="tinydynamo")  # it ran eagerly before
        out, tail = compiled(x)
        assert tail._base is out and out.requires_grad
        assert_close((out, tail), fills_a_zeros_like_buffer(x))
        assert_close(grads_of(compiled, [x], loss), grads_of(fills_a_zeros_like_buffer, [x], loss))


def route_with_one_hot(experts, x):
    return F.one_hot(experts, 5).to(x.dtype) @ x  # as a mixture of experts' router mask


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_one_hot_with_a_class_count_is_traced_without_its_range_checks(backend):
    # aten's one_hot checks the classes with .item() of their min and max: the frame ran eagerly
    experts, (x,) = torch.tensor([[0, 3, 4], [4, 1, 0]]), leaves((5, 3))
    compiled = tinydynamo.compile(route_with_one_hot, backend=backend)
    loss = lambda out: (out * torch.arange(18.0).reshape(2, 3, 3)).sum()  # noqa: E731
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="tinydynamo")
        assert_close(compiled(experts, x), route_with_one_hot(experts, x))
        assert_close(grads_of(compiled, [experts, x], loss), grads_of(route_with_one_hot, [experts, x], loss))


def view_of_input(x, y):
    return x.t(), x[1:], y * 2


def test_output_that_views_an_input_aliases_it():
    x, y = leaves((3, 4), (3,))
    fn = compile_fn(view_of_input, x, y)
    xt, tail, _ = fn(x, y)
    assert xt._base is x and tail._base is x
    with torch.no_grad():
        tail.add_(100)  # writes through to x, as in eager
    assert x[2, 0] > 50
    loss = lambda o: (o[0] * o[0]).sum() + o[1].sum() + o[2].sum()  # noqa: E731
    assert_close(grads_of(fn, [x, y], loss), grads_of(view_of_input, [x, y], loss))


def views_of_intermediate(x):
    y = x * 2
    return y, y.view(-1), y[0].detach()


def test_outputs_that_view_an_intermediate_alias_each_other():
    (x,) = leaves((3, 4))
    base, flat, row = compile_fn(views_of_intermediate, x)(x)
    assert flat._base is base
    # Detached, but still sharing memory with the base.
    assert row.untyped_storage().data_ptr() == base.untyped_storage().data_ptr()
    assert not row.requires_grad and flat.requires_grad
    with torch.no_grad():
        flat[0] = 42.0
    assert base[0, 0] == 42.0 and row[0] == 42.0


def return_input(x, y):
    return x, x * y


def test_output_that_is_an_input_is_returned_as_is():
    x, y = leaves((3,), (3,))
    out = compile_fn(return_input, x, y)(x, y)
    assert out[0] is x


def test_requires_grad_false_inputs_get_no_gradient():
    (w,) = leaves((3, 5))
    (x,) = leaves((4, 3), requires_grad=False)
    fn = compile_fn(matmul, x, w)
    fn(x, w).sum().backward()
    assert x.grad is None
    assert_close(w.grad, x.t() @ torch.ones(4, 5))


def test_parameters_of_the_graph_module_are_lifted_and_get_gradients():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    reference = copy.deepcopy(model)
    x = torch.randn(5, 3)
    fn = aot_eager(torch.fx.symbolic_trace(model), [x])
    fn(x).pow(2).sum().backward()
    reference(x).pow(2).sum().backward()
    for p, q in zip(model.parameters(), reference.parameters()):
        assert_close(p.grad, q.grad)


def test_retain_graph_allows_a_second_backward():
    x, w = leaves((4, 3), (3, 5))
    out = compile_fn(matmul, x, w)(x, w).tanh().sum()
    out.backward(retain_graph=True)
    first = w.grad.clone()
    out.backward()
    assert_close(w.grad, 2 * first)


def test_two_calls_before_backward_keep_their_own_saved_values():
    x1, x2, w = leaves((4, 3), (4, 3), (3, 5))
    fn = compile_fn(lambda x, w: (x @ w).sin(), x1, w)
    (fn(x1, w) * fn(x2, w)).sum().backward()
    expected = torch.autograd.grad(((x1 @ w).sin() * (x2 @ w).sin()).sum(), [x1, x2, w])
    assert_close([x1.grad, x2.grad, w.grad], list(expected))


def test_create_graph_gives_first_derivatives_and_a_second_raises_a_clear_error():
    (x,) = leaves((3,))
    out = compile_fn(lambda x: (x * 2).sin(), x)(x).sum()
    grad, = torch.autograd.grad(out, x, create_graph=True)
    assert_close(grad, 2 * (x * 2).cos())
    assert grad.requires_grad
    with pytest.raises(RuntimeError, match="double backward"):
        grad.sum().backward()


class NoGradRegion(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(3, 3)

    def forward(self, x):
        with torch.no_grad():
            scale = self.linear(x).abs().mean()
        return self.linear(x) * scale, scale


def test_no_grad_region_inside_the_graph():
    torch._dynamo.reset()
    torch.manual_seed(0)
    model, x = NoGradRegion(), torch.randn(2, 3)
    reference = copy.deepcopy(model)
    out, scale = torch.compile(model, backend=CountingBackend(), fullgraph=True)(x)
    expected, expected_scale = reference(x)
    assert not scale.requires_grad
    assert_close((out, scale), (expected, expected_scale))
    out.sum().backward()
    expected.sum().backward()
    assert_close(model.linear.weight.grad, reference.linear.weight.grad)


def dropout_mlp(x, w):
    return F.dropout(F.relu(x @ w), p=0.5, training=True).sum(dim=1)


def test_random_ops_draw_the_numbers_eager_draws():
    x, w = leaves((8, 6), (6, 16))
    fn = compile_fn(dropout_mlp, x, w)
    torch.manual_seed(1)
    out = fn(x, w)
    torch.manual_seed(1)
    expected = dropout_mlp(x, w)
    assert_close(out, expected)
    loss = lambda o: o.sum()  # noqa: E731
    assert_close(torch.autograd.grad(loss(out), w), torch.autograd.grad(loss(expected), w))


def test_inference_graph_without_autograd_function():
    x, w = leaves((4, 3), (3, 5))
    with torch.no_grad():
        fn = compile_fn(matmul, x, w)
        out = fn(x, w)
    assert out.grad_fn is None
    assert_close(out, x @ w)
    with pytest.raises(RuntimeError, match="compiled for inference"):
        fn(x, w)  # grad mode is on now and x, w require grad


def test_training_graph_called_under_no_grad():
    x, w = leaves((4, 3), (3, 5))
    fn = compile_fn(matmul, x, w)
    with torch.no_grad():
        out = fn(x, w)
    assert out.grad_fn is None
    assert_close(out, x @ w)


def test_inputs_unlike_the_traced_ones_are_refused():
    x, w = leaves((4, 3), (3, 5))
    fn = compile_fn(matmul, x, w)
    with pytest.raises(RuntimeError, match="input 0 was traced as"):
        fn(torch.randn(5, 3), w)
    with pytest.raises(RuntimeError, match="input 1 was traced as"):
        fn(x, w.t().contiguous().t())


def test_an_input_with_other_strides_only_on_a_size_1_dimension_is_accepted():
    # an exact layout passes a fast check; other strides pass where they cannot matter
    x, w = leaves((4, 1), (1, 5), requires_grad=False)
    fn = compile_fn(matmul, x, w)
    other_x = torch.randn(4, 1).as_strided((4, 1), (1, 7))
    assert_close(fn(other_x, w), other_x @ w)
    with pytest.raises(RuntimeError, match="input 0 was traced as"):
        fn(torch.randn(8, 1)[::2], w)  # strides (2, 1): the size-4 dimension's differs
    with pytest.raises(RuntimeError, match="input 0 was traced as"):
        fn(x.double(), w)


def test_inference_outputs_and_grad_mode_are_as_in_eager():
    x, w = leaves((4, 3), (3, 5), requires_grad=False)
    fn = compile_fn(several_outputs, x, w)
    out = fn(x, w)
    assert type(out) is tuple and len(out) == 5 and out[2] == 4 and out[3] is None
    assert torch.is_grad_enabled() and out[0].grad_fn is None and not out[0]._is_view()
    with torch.no_grad():
        fn(x, w)
    assert torch.is_grad_enabled()


def test_aot_logs_print_joint_forward_and_backward_graphs(capsys):
    x, w = leaves((4, 3), (3, 5))
    tinydynamo.set_logs("aot")
    try:
        compile_fn(lambda x, w: F.gelu(x @ w), x, w)
    finally:
        tinydynamo.set_logs("")
    err = capsys.readouterr().err
    for title in ("joint graph", "forward graph", "backward graph"):
        assert f"[tinydynamo:aot] {title}:" in err
    assert "torch.ops.aten.gelu_backward.default" in err


@pytest.mark.parametrize("offset", [0, 5, 10])
def test_as_strided_of_an_input_view_reads_its_memory_as_eager_does(offset):
    # as_strided addresses the storage: here, memory before and after the view's own elements.
    # The graph cannot see it, so the frame runs eagerly; it used to read the traced copy instead.
    x = torch.arange(20.0)[5:15]
    fn = lambda t: torch.as_strided(t, (2, 2), (1, 2), offset) * 2  # noqa: E731
    tinydynamo.reset()  # (compile() would reuse the eager entry of the other offsets: one code object)
    with pytest.warns(UserWarning, match="as_strided of a graph input"):
        assert_close(tinydynamo.compile(fn)(x), fn(x))


def test_eval_mode_legit_batch_norm_writes_no_statistics_and_trains():
    # Its schema says it may write running_mean/var; with training=False it does not. Recorded as
    # a write, the write-back bumped the version of statistics its backward had saved.
    def fn(x, weight, bias, mean, var):
        return torch.ops.aten._native_batch_norm_legit(x, weight, bias, mean, var, False, 0.1, 1e-5)[0]

    x, weight, bias = leaves((3, 2, 4), (2,), (2,))
    mean, var = torch.randn(2), torch.rand(2) + 0.5
    expected_mean = mean.clone()
    compiled = tinydynamo.compile(fn)
    loss = lambda out: (out * out).sum()  # noqa: E731
    assert_close(grads_of(compiled, [x, weight, bias, mean, var], loss),
                 grads_of(fn, [x, weight, bias, mean, var], loss))
    assert_close(mean, expected_mean)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_a_result_restrided_in_place_by_a_composite_op(backend):
    """adaptive_avg_pool1d of a transposed tensor restrides its result with as_strided_ (swin's
    pooler): both frontends trace it, forward and backward, as eager computes it."""
    def pool(x):
        return torch.adaptive_avg_pool1d(x.transpose(1, 2), 1).flatten(1) * 2

    x = torch.randn(2, 16, 8, requires_grad=True)
    x_eager = x.detach().clone().requires_grad_()
    torch._dynamo.reset()
    for compiled in (tinydynamo.compile(pool, backend=backend), torch.compile(pool, backend="tinydynamo")):
        x.grad = None
        out = compiled(x)
        expected = pool(x_eager)
        out.sum().backward()
        x_eager.grad = None
        expected.sum().backward()
        assert_close(out, expected)
        assert_close(x.grad, x_eager.grad)


class VectorQuantizer(torch.nn.Module):
    """diffusers' VQModel in miniature: the codebook gets a gradient only through ``commit``."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)
        self.codebook = torch.nn.Embedding(8, 4)

    def forward(self, z):
        z = self.proj(z)
        z_q = self.codebook(torch.cdist(z, self.codebook.weight).argmin(-1))
        commit = ((z_q - z.detach()) ** 2).mean()
        return z + (z_q - z).detach(), commit


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_gradient_only_through_an_unused_output_is_none_as_in_eager(backend):
    """torch.compile gives zeros here; an optimizer would then decay a parameter eager leaves alone."""
    torch.manual_seed(0)
    eager, compiled_model = VectorQuantizer(), VectorQuantizer()
    compiled_model.load_state_dict(eager.state_dict())
    compiled = tinydynamo.compile(compiled_model, backend=backend)
    z = torch.randn(5, 4)
    eager(z)[0].sum().backward()
    compiled(z)[0].sum().backward()
    assert eager.codebook.weight.grad is None and compiled_model.codebook.weight.grad is None
    torch.testing.assert_close(compiled_model.proj.weight.grad, eager.proj.weight.grad)
    compiled(z)[1].backward()  # now through commit: the codebook gets its gradient
    eager(z)[1].backward()
    torch.testing.assert_close(compiled_model.codebook.weight.grad, eager.codebook.weight.grad)


def writes_a_gradient_into_zeros(h):
    out = torch.zeros_like(h)  # does not require grad, until a value that does is written in
    out[0] = h[0] * 2
    return out


def uses_the_written_tensor(h):
    return writes_a_gradient_into_zeros(h) * 3


@pytest.mark.parametrize("fn", [writes_a_gradient_into_zeros, uses_the_written_tensor])
@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_an_in_place_write_of_a_gradient_into_a_fresh_tensor(fn, backend, recwarn):
    """recurrent_gemma's ``states = zeros_like(h); states[:, t] = s``: the written tensor requires
    grad as in eager (returned as it is, the frame runs eagerly, with a warning)."""
    h = torch.randn(3, 4, requires_grad=True)
    out = tinydynamo.compile(fn, backend=backend)(h)
    assert out.requires_grad
    (grad,) = torch.autograd.grad(out.sum(), h)
    (expected,) = torch.autograd.grad(fn(h).sum(), h)
    torch.testing.assert_close(grad, expected)


def mlp_of_a_3d_input(x, w1, w2):
    return F.linear(F.gelu(F.linear(x, w1)), w2)  # linear's mm result, reshaped to 3-d


def returns_views(gm, example_inputs):
    """A compiler whose graph returns each output as a view of a fresh tensor, as inductor
    returns an extern kernel's buffer reinterpreted (``mm``'s result reshaped)."""
    def run(*args):
        return [out.clone().view(out.shape) if isinstance(out, torch.Tensor) else out
                for out in gm(*args)]
    return run


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("compiler", ["returns_views", "inductor"])
def test_an_output_the_compiled_graph_returns_as_a_view_can_be_written_in_place(compiler, dynamic):
    """Falcon's ``mlp_output += attention_output`` after a compiled MLP: autograd refused the
    in-place write ("Output 0 of CompiledFunction is a view") when the compiled graph returned
    its output as a view although the program computed a fresh tensor."""
    def backend(gm, example_inputs):
        if compiler == "inductor":
            return tinydynamo.backends.inductor(gm, example_inputs)
        return tinydynamo.aot.aot_autograd(gm, example_inputs, fw_compiler=returns_views)

    def step(fn, x, w1, w2):
        out = fn(x, w1, w2)
        out += 1.0
        return torch.autograd.grad((out * out).sum(), [x, w1, w2])

    x, w1, w2 = leaves((2, 5, 8), (16, 8), (8, 16))
    compiled = tinydynamo.compile(mlp_of_a_3d_input, backend=backend, dynamic=dynamic)
    assert_close(step(compiled, x, w1, w2), step(mlp_of_a_3d_input, x, w1, w2))


@pytest.mark.parametrize("compiler", ["returns_views", "inductor"])
def test_an_output_computed_without_autograd_can_be_written_in_place_with_grad(compiler):
    """No input requires grad, so the graph runs under no_grad; a view it returned could not be
    written in place afterwards with a tensor that requires grad ("A view was created in no_grad
    mode and is being modified inplace with grad mode enabled")."""
    def backend(gm, example_inputs):
        if compiler == "inductor":
            return tinydynamo.backends.inductor(gm, example_inputs)
        return tinydynamo.aot.aot_autograd(gm, example_inputs, fw_compiler=returns_views)

    def step(fn, x, w1, w2, bias):
        out = fn(x, w1, w2)
        out += bias
        return out, torch.autograd.grad((out * out).sum(), [bias])

    (bias,) = leaves((8,))
    x, w1, w2 = leaves((2, 5, 8), (16, 8), (8, 16), requires_grad=False)
    compiled = tinydynamo.compile(mlp_of_a_3d_input, backend=backend)
    assert_close(step(compiled, x, w1, w2, bias), step(mlp_of_a_3d_input, x, w1, w2, bias))


def test_a_backward_the_tracer_cannot_record_runs_the_frame_eagerly():
    """torch.vander's backward fails in eager ("modified by an inplace operation"): AOT autograd
    met that error while tracing the backward, and the forward raised it, where eager's does not.
    The frame now runs eagerly, with a warning: the forward equals eager's, and the backward
    raises what eager's raises."""
    def powers(x):
        return torch.vander(x, N=4)

    x = torch.randn(3, requires_grad=True)
    with pytest.warns(UserWarning, match="runs eagerly"):
        out = tinydynamo.compile(powers, backend="aot_eager")(x)
    torch.testing.assert_close(out, powers(x))
    for result in (out, powers(x)):
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            result.sum().backward()


def discriminate(fake, weight):
    return (fake.detach() * weight).sum()


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_an_input_used_only_detached_gets_no_autograd_edge(backend):
    """A GAN's discriminator step, ``D(fake.detach())`` after the generator's backward freed the
    history of ``fake``: the backward raised "backward through the graph a second time", and with
    the history alive the generator's weight got a zero gradient where eager leaves None."""
    generator_weight, weight = torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)
    compiled = tinydynamo.compile(discriminate, backend=backend)
    fake = torch.ones(3) * generator_weight
    fake.sum().backward()
    compiled(fake, weight).backward()
    torch.testing.assert_close(weight.grad, fake.detach())
    generator_weight.grad = None
    compiled(torch.ones(3) * generator_weight, weight).backward()
    assert generator_weight.grad is None


def update_a_cache(cache, x, weight):
    cache[1] = x @ weight
    return cache.sum()


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_a_buffer_written_with_values_that_require_grad_gets_their_history(backend):
    """gpt-fast's KV cache, ``k_cache[:, :, pos] = k``: in eager the buffer then requires grad, and a
    loss computed from it reaches the weight. The compiled write dropped the history."""
    weight = torch.randn(4, 4, requires_grad=True)
    x = torch.randn(4)
    cache = torch.zeros(3, 4)
    tinydynamo.compile(update_a_cache, backend=backend)(cache, x, weight)
    assert cache.requires_grad and cache.grad_fn is not None
    (cache * 2).sum().backward()
    expected_weight = weight.detach().clone().requires_grad_()
    expected = torch.zeros(3, 4)
    update_a_cache(expected, x, expected_weight)
    (expected * 2).sum().backward()
    torch.testing.assert_close(weight.grad, expected_weight.grad)


def s4d_kernel(log_a_real, a_imag, t):
    a = -torch.exp(log_a_real) + 1j * a_imag  # S4D's diagonal state matrix
    return torch.exp(a[:, None] * t).real.sum(0)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_a_product_with_a_python_complex_number_differentiates(backend):
    """Its backward conjugates the number (``_conj`` of 1j), which the tracer took for a view of a
    tensor it had never seen: a KeyError while tracing the backward."""
    inputs = [torch.randn(4, requires_grad=True), torch.randn(4, requires_grad=True), torch.linspace(0, 1, 5)]
    expected = s4d_kernel(*inputs)
    expected.sum().backward()
    expected_grads = [t.grad.clone() for t in inputs[:2]]
    for t in inputs[:2]:
        t.grad = None
    actual = tinydynamo.compile(s4d_kernel, backend=backend)(*inputs)
    actual.sum().backward()
    torch.testing.assert_close(actual, expected)
    torch.testing.assert_close([t.grad for t in inputs[:2]], expected_grads)
