"""``tinydynamo.explain(fn)(*args)``: what did dynamo capture, and why not more? (chapters 4
and 5)

It runs ``fn`` once under a fresh callback whose backend only records the graphs, then reports
how many graphs were captured, every graph break (the reason, and the ``file:line`` of the
user's code where it happened; also the breaks that made a whole frame run eagerly), and the
source of each guard function. As in ``torch._dynamo.explain``, a break with no op before it
(a ``print`` at the top of the function) cut no graph: it is listed but not counted.

A graph counts once for every time the backend compiles one. A frame that forks
(``torch.jit.fork``, see ``fork_join``) gives several without any graph break: each forked
body, and each piece of the frame's graph cut at its forks and waits. ``meta["fork_join"]`` of
such a graph says which it is, and the report prints it.
"""
import dataclasses

from .convert_frame import ConvertFrame
from .api import with_callback
from .trace_rules import library_file


@dataclasses.dataclass
class BreakReason:
    reason: str
    filename: str | None  # where in the user's code (for a break inside torch or the standard
    lineno: int | None  # library, the user's call that led there)
    user_stack: list  # [(filename, lineno, function name)], outermost first
    frame_ran_eagerly: bool = False  # the graph could not break there: the whole frame ran as Python
    graph_cut: bool = True  # False: no op came before the break (a print at the top), so no graph was cut

    @classmethod
    def from_error(cls, error, frame_ran_eagerly, graph_cut):
        users = [frame for frame in error.user_stack if library_file(frame[0]) is None]
        filename, lineno, _ = (users or error.user_stack or [(None, None, None)])[-1]
        return cls(error.reason, filename, lineno, error.user_stack, frame_ran_eagerly, graph_cut)

    @property
    def counted(self):
        return self.graph_cut or self.frame_ran_eagerly

    def __str__(self):
        eager = " [the frame ran eagerly]" if self.frame_ran_eagerly else ""
        uncut = "" if self.counted else " [no op before it: no graph was cut, not counted]"
        return f"{self.reason} ({self.filename}:{self.lineno}){eager}{uncut}"


@dataclasses.dataclass
class ExplainOutput:
    graphs: list  # the GraphModules, in the order they were compiled
    break_reasons: list  # a BreakReason per graph break, in the order they happened
    guards: list  # the source of each compiled frame's guard function
    out: object = None  # what fn returned

    @property
    def graph_count(self):
        return len(self.graphs)

    @property
    def graph_break_count(self):
        """The breaks that cut a graph in two, or made a frame run eagerly, as torch._dynamo's
        explain counts them: a break with no op before it is listed, not counted."""
        return sum(reason.counted for reason in self.break_reasons)

    @property
    def ops_per_graph(self):
        return [[n.target for n in gm.graph.nodes if n.op in ("call_function", "call_method")]
                for gm in self.graphs]

    def __str__(self):
        lines = [f"Graph count: {self.graph_count}", f"Graph break count: {self.graph_break_count}",
                 f"Op count: {sum(len(ops) for ops in self.ops_per_graph)}"]
        if self.break_reasons:
            lines.append("Break reasons:")
            lines += [f"  {i + 1}. {reason}" for i, reason in enumerate(self.break_reasons)]
        for i, gm in enumerate(self.graphs):
            what = f" ({gm.meta['fork_join']})" if "fork_join" in getattr(gm, "meta", {}) else ""
            lines += [f"Graph {i}{what}:", gm.print_readable(print_output=False)]
        for i, guard in enumerate(self.guards):
            lines += [f"Guards {i}:", guard]
        return "\n".join(lines)


def explain(fn):
    """``explain(fn)(*args, **kwargs)`` -> ExplainOutput."""

    def run(*args, **kwargs):
        graphs = []

        def record(gm, example_inputs):
            graphs.append(gm)
            return gm.forward

        callback = ConvertFrame(record, fullgraph=False)
        try:
            out = with_callback(fn, callback)(*args, **kwargs)
        finally:
            callback.forget()
        resumed = {id(frame.graph_break): frame.graph_cut for frame in callback.compiled}
        reasons = [BreakReason.from_error(e, id(e) not in resumed, resumed.get(id(e), True))
                   for e in callback.break_reasons]
        return ExplainOutput(graphs, reasons, [frame.guard.source for frame in callback.compiled], out)

    return run
