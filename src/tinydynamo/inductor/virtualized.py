"""``ops`` and ``V``: the swappable ops handler behind every loop body (chapter 8, "The loop IR").

A loop body in the IR is a plain Python function, ``inner_fn(index)``, that computes one element
by calling ``ops.load``, ``ops.add``, ``ops.exp``... It never says *what* those calls do: ``ops``
forwards each call to the handler installed at that moment. The same body therefore

* prints itself as readable IR under a printing handler (``TINYDYNAMO_LOGS=ir``),
* reports which buffers and indices it reads under a recording handler (the scheduler),
* emits C++ under the C++ kernel's handler (codegen),

which is TorchInductor's ``V.ops`` / ``virtualized.py`` design ("define-by-run IR").

The ops a handler must provide (all values are whatever that handler uses to stand for one):

    load(name, index)           element ``index`` (an indexing.Expr) of buffer ``name``
    constant(value, dtype)      a Python scalar as a value of ``dtype``
    index_expr(expr, dtype)     the value of an index expression (iota)
    to_dtype(x, dtype)          conversion (convert_element_type)
    indirect_indexing(x, size)  an index variable whose value is ``x`` (gather), in [0, size)
    masked(mask, body, other)   ``body()`` where mask is true, else ``other`` (body may load
                                out of bounds where the mask is false; it must not run there)
    where(pred, a, b)
    and one method per pointwise prim, with the prim's name: add, exp, maximum, eq, ...
"""
import contextlib
import threading

_state = threading.local()


def _current_handler():
    handler = getattr(_state, "handler", None)
    if handler is None:
        raise RuntimeError("ops.* called outside of an ops handler (use V.set_ops_handler)")
    return handler


class _OpsProxy:
    """``ops.exp(x)`` calls ``exp`` on the handler that is installed now."""

    def __getattr__(self, name):
        return getattr(_current_handler(), name)


ops = _OpsProxy()


class _V:
    """The virtualized globals: ``V.ops`` is ``ops``; ``V.set_ops_handler`` swaps its handler."""

    ops = ops

    @staticmethod
    @contextlib.contextmanager
    def set_ops_handler(handler):
        previous = getattr(_state, "handler", None)
        _state.handler = handler
        try:
            yield handler
        finally:
            _state.handler = previous


V = _V()
