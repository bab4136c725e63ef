"""``torch.jit.fork`` and ``torch.jit.wait``, traced instead of broken (book chapter 14).

In eager Python, ``torch.jit.fork(fn, *args)`` calls ``fn`` at once and returns a finished
``torch.jit.Future``; only TorchScript runs it on another thread. PyTorch's Dynamo breaks the
graph there. tinydynamo traces it, so that the compiled frame can run it concurrently:

- ``trace_fork`` traces the call of ``fn`` (a function, an ``nn.Module``, a torch function...)
  into a graph of its own, nested in the current one (``OutputGraph.subgraph``). The current
  graph gets two nodes, as Dynamo's higher-order ops do: ``get_attr`` of that body, and
  ``fork_join.fork(body, *inputs)``, whose inputs are the values the body lifted (its
  arguments, tensors it closes over, parameters it reads);
- the fork returns a ``FutureVariable``. ``torch.jit.wait(future)`` (or ``future.wait()``)
  adds ``fork_join.wait(fork)`` and one ``getitem`` per tensor the body returned: trackers of
  the current graph, put back into the structure the body returned (a tuple, a list...).

``fork_join`` compiles each body on its own and runs it on a thread pool from the fork to the
wait. If it cannot, it runs the body where eager does, at the fork.

A body that cannot be traced whole (something Unsupported inside it, a mutation of an object
outside it, a change of grad mode) is Unsupported at the fork: the graph breaks there and the
fork runs in Python, as in eager. So does a future that outlives the graph (returned, stored
on an object): the error names the fork's instruction, where the graph then breaks.
"""
import operator

import torch

from .. import fork_join
from ..exc import Unsupported, unsupported
from .base import VariableTracker
from .lists import ListVariable, TupleVariable
from .tensor import TensorVariable


def trace_fork(tx, fn, args, kwargs):
    """``torch.jit.fork(fn, *args, **kwargs)``: trace ``fn``'s call into a body graph; return
    the FutureVariable of the fork node."""
    output = tx.output
    grad_mode, side_effects, global_writes = torch.is_grad_enabled(), output.side_effects.version, \
        dict(output.global_writes)
    with output.subgraph() as body:
        try:
            result = fn.call_function(tx, list(args), kwargs)
        except Unsupported as error:
            raise cannot_fork(fn, error) from None
        tensors, rebuild = flatten_results(result)
        body.create_proxy("output", "output", (tuple(t.proxy for t in tensors),), {})
    if torch.is_grad_enabled() != grad_mode:
        unsupported(f"torch.jit.fork of {fn}: the forked function changes the grad mode")
    if output.side_effects.version != side_effects or output.global_writes != global_writes:
        unsupported(f"torch.jit.fork of {fn}: the forked function changes objects outside it (a side effect)")
    parent = output.current_tracer
    name = parent.add_submodule("fork_body", body.graph_module())
    inputs = [torch.fx.Proxy(node, parent) for node in body.lifted]
    fork = output.create_proxy("call_function", fork_join.fork,
                               (parent.create_proxy("get_attr", name, (), {}), *inputs), {})
    fork.node.meta["example_value"] = tuple(t.example_value for t in tensors)
    fork.node.meta["grad_mode"] = grad_mode  # the body runs in it, on whatever thread runs it
    output.forks_outstanding.add(fork.node)
    return FutureVariable(fork, tensors, rebuild, fork_site(tx))


def cannot_fork(fn, error):
    """The Unsupported error for a body that could not be traced (not a TracedException: a
    ``try`` around the fork must not catch it), at the fork, with the body's user stack."""
    wrapped = Unsupported(f"torch.jit.fork of {fn}: the forked function cannot be traced whole: {error.reason}")
    wrapped.user_stack = error.user_stack
    return wrapped


def flatten_results(result):
    """The tensors in what a forked function returns, and ``rebuild(trackers)``, which puts
    other trackers in their places. Tensors, constants, and tuples and lists of them."""
    tensors = []

    def template(var):
        if isinstance(var, TensorVariable):
            tensors.append(var)
            index = len(tensors) - 1
            return lambda items: items[index]
        if type(var) in (TupleVariable, ListVariable):
            parts = [template(item) for item in var.items]
            if isinstance(var, ListVariable):
                return lambda items: ListVariable([part(items) for part in parts])
            return lambda items: TupleVariable([part(items) for part in parts], tuple_cls=var.tuple_cls)
        if var.is_python_constant():
            return lambda items: var
        unsupported(f"a forked function that returns {var} (it may return tensors and constants, "
                    "in tuples and lists)")

    return tensors, template(result)


def fork_site(tx):
    """The frame being compiled, and its instruction that is running the fork (the CALL of
    ``torch.jit.fork``, or of the function that calls it): where the graph breaks if the
    future escapes."""
    while tx.parent is not None:
        tx = tx.parent
    return tx, tx.current_instruction


class FutureVariable(VariableTracker):
    """The ``torch.jit.Future`` of a fork traced in this frame: its node, the body's result
    trackers (for their examples and devices), and, once waited for, the results."""

    def __init__(self, proxy, tensors, rebuild, site):
        super().__init__()
        self.proxy = proxy  # the fork node
        self.tensors = tensors
        self.rebuild = rebuild
        self.site = site
        self.results = None

    def python_type(self):
        return torch._C.Future  # what eager's torch.jit.fork returns

    def wait(self, tx):
        """``torch.jit.wait(future)``: the body's results, as trackers of the current graph (the
        one that forked it). Waiting again returns the same values, as a future does."""
        if self.results is not None:
            return self.results
        if self.proxy.node.graph is not tx.output.current_tracer.graph:
            unsupported("torch.jit.wait of a future forked in another graph (a forked function "
                        "waiting for a future forked outside it, or the reverse)")
        joined = tx.output.create_proxy("call_function", fork_join.wait, (self.proxy,), {})
        items = []
        for i, tensor in enumerate(self.tensors):
            item = tx.output.create_proxy("call_function", operator.getitem, (joined, i), {})
            item.node.meta["example_value"] = tensor.example_value
            items.append(TensorVariable(item, tensor.example_value, tensor.device, python_cls=tensor.python_cls))
        tx.output.forks_outstanding.discard(self.proxy.node)
        self.results = self.rebuild(items)
        return self.results

    def call_method(self, tx, name, args, kwargs):
        if name == "wait" and not args and not kwargs:
            return self.wait(tx)
        unsupported(f"torch.jit.Future.{name}")

    def reconstruct(self, codegen):
        """A future cannot outlive the graph that runs its fork: the graph breaks at the fork
        instead, which then runs in Python (``Unsupported.first_seen``)."""
        frame, instruction = self.site
        error = Unsupported(f"a torch.jit.Future forked at line {instruction.positions.lineno} outlives "
                            "the graph (returned, stored, or alive at a graph break)")
        error.first_seen[frame] = instruction
        raise error

    def __repr__(self):
        return f"FutureVariable({self.proxy.node.name})"
