"""``tinydynamo.explain(fn)(*args)``: what did dynamo capture, and why not more? (chapter 4)

It runs ``fn`` once under a fresh callback whose backend only records the graphs, then reports
how many graphs were captured, which frames could not be captured (with the reason and the
user's ``file:line``), and the source of each guard function.
"""
import dataclasses

from .convert_frame import ConvertFrame
from .eval_frame import with_callback


@dataclasses.dataclass
class BreakReason:
    reason: str
    filename: str | None
    lineno: int | None
    user_stack: list  # [(filename, lineno, function name)], outermost first

    def __str__(self):
        return f"{self.reason} ({self.filename}:{self.lineno})"


@dataclasses.dataclass
class ExplainOutput:
    graphs: list  # the GraphModules, in the order they were compiled
    break_reasons: list  # BreakReason per frame that ran eagerly
    guards: list  # the source of each compiled frame's guard function
    out: object = None  # what fn returned

    @property
    def graph_count(self):
        return len(self.graphs)

    @property
    def graph_break_count(self):
        return len(self.break_reasons)

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
            lines += [f"Graph {i}:", gm.print_readable(print_output=False)]
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
        reasons = [BreakReason(e.reason, e.filename, e.lineno, e.user_stack) for e in callback.break_reasons]
        return ExplainOutput(graphs, reasons, [frame.guard.source for frame in callback.compiled], out)

    return run
