"""The book's figures, drawn with matplotlib from the real objects when the book is built.

Every figure is laid out in inches: one data unit of its axes is one inch of the page, so that a
box, a label and a gap have the same size in every figure. The book's content column is about
7 inches (688 px) wide, and figures are drawn to fit it at 100% zoom, with 9-10 pt labels.
Importing this module makes the notebook's inline backend emit SVG.
"""
import collections

import matplotlib.pyplot as plt
from matplotlib.patches import FancyBboxPatch, Patch, Rectangle
from matplotlib_inline.backend_inline import set_matplotlib_formats

set_matplotlib_formats("svg")
plt.rcParams.update({"font.size": 9, "svg.hashsalt": "tinydynamo"})

COLUMN = 7.0  # inches: the widest figure that is shown at its own size
FONT = 9
ROW = 0.72  # inches from one row of a graph to the next
GREY, BLUE, ORANGE, GREEN, RED = "#d9d9d9", "#9ec5f4", "#f9c58d", "#a8dca0", "#c0392b"
OP_COLOURS = {"placeholder": GREY, "get_attr": GREY, "call_function": BLUE, "call_method": BLUE,
              "call_module": GREEN, "output": ORANGE}


def canvas(width, height):
    """A figure whose axes span it, measured in inches, with y growing downwards."""
    fig = plt.figure(figsize=(width, height))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(height, 0)
    ax.axis("off")
    return fig, ax


def box(ax, x, y, text, width, height=0.36, colour=BLUE, edge="#666666", linewidth=0.6, linestyle="-",
        **text_args):
    """A rounded box centred on (x, y) with its label."""
    ax.add_patch(FancyBboxPatch((x - width / 2, y - height / 2), width, height, linewidth=linewidth,
                                linestyle=linestyle, boxstyle="round,pad=0,rounding_size=0.06",
                                facecolor=colour, edgecolor=edge))
    ax.text(x, y, text, ha="center", va="center", fontsize=text_args.pop("fontsize", FONT), **text_args)


def arrow(ax, start, end, colour="#777777", **style):
    ax.annotate("", xy=end, xytext=start, arrowprops=dict(arrowstyle="-|>", color=colour, linewidth=0.8,
                                                           shrinkA=0, shrinkB=0, **style))


def text_width(text, fontsize=FONT):
    """About how wide a label is, in inches (its longest line)."""
    return max(map(len, text.splitlines())) * fontsize * 0.6 / 72


def layers(nodes, inputs_of):
    """Rows of a DAG: a node sits one row below its deepest input; `nodes` are in topological order.

    A node without inputs sits just above its first user. Within a row nodes are ordered by where
    their inputs are, so that edges cross little.
    """
    depth, users = {}, collections.defaultdict(list)
    for node in nodes:
        depth[node] = 1 + max((depth[i] for i in inputs_of(node) if i in depth), default=-1)
        for i in inputs_of(node):
            users[i].append(node)
    for node in nodes:
        if not any(i in depth for i in inputs_of(node)) and users[node]:
            depth[node] = min(depth[u] for u in users[node]) - 1
    rows, place = collections.defaultdict(list), {}
    for node in nodes:
        rows[depth[node]].append(node)
    for d in sorted(rows):
        order = {node: i - (len(rows[d]) - 1) / 2 for i, node in enumerate(rows[d])}
        for node in rows[d]:
            inputs = [place[i] for i in inputs_of(node) if i in place]
            order[node] = sum(inputs) / len(inputs) if inputs else order[node]
        rows[d].sort(key=order.get)
        for i, node in enumerate(rows[d]):
            place[node] = i - (len(rows[d]) - 1) / 2
    return [rows[d] for d in sorted(rows)]


def place(rows, left, top, width, row_height=ROW):
    """Centres of the nodes of `layers` rows, spread over a band `width` inches wide."""
    column = width / max(len(row) for row in rows)
    return {node: (left + width / 2 + (i - (len(row) - 1) / 2) * column, top + (r + 0.5) * row_height)
            for r, row in enumerate(rows) for i, node in enumerate(row)}


def draw_nodes(ax, centre, label, box_width, style=lambda node: {}):
    """A box per node; returns each box's half height, where its arrows start and end."""
    half = {}
    for node, (x, y) in centre.items():
        half[node] = 0.1 + 0.07 * (label(node).count("\n") + 1)
        box(ax, x, y, label(node), box_width, 2 * half[node], **style(node))
    return half


def draw_edges(ax, centre, half, inputs_of):
    """An arrow from each input's box to its user's."""
    for node, (x, y) in centre.items():
        for source in inputs_of(node):
            if source in centre:
                sx, sy = centre[source]
                long = y - sy > 1.5 * ROW  # skips a row: bow outwards, in a lighter grey than the boxes
                bend = (-0.3 if sx > x else 0.3) if long else 0
                arrow(ax, (sx, sy + half[source]), (x, y - half[node]), colour="#aaaaaa" if long else "#777777",
                      connectionstyle=f"arc3,rad={bend}")


def draw_dag(ax, rows, inputs_of, label, left, top, width, style=lambda node: {}):
    """Draw the rows of `layers` in a band `width` inches wide; `label(node)` is a node's text and
    `style(node)` extra arguments for its `box`."""
    centre = place(rows, left, top, width)
    column = width / max(len(row) for row in rows)
    box_width = min(column - 0.12, max(text_width(label(n)) for n in centre) + 0.2)
    draw_edges(ax, centre, draw_nodes(ax, centre, label, box_width, style), inputs_of)


def legend(ax, entries, y, left=0.1):
    """One row of coloured patches: entries are (label, facecolour, edgecolour)."""
    handles = [Patch(facecolor=face, edgecolor=edge, linewidth=1.5, label=text) for text, face, edge in entries]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(left, y), bbox_transform=ax.transData,
              ncols=len(entries), fontsize=FONT, frameon=False, handlelength=1.2, columnspacing=1.2)


# --- FX graphs ---------------------------------------------------------------------------------

def short_target(node):
    """`torch.relu`, `operator.mul`, `aten.addmm`, or a method name, for a node's label."""
    target = node.target
    if node.op in ("call_method", "call_module", "get_attr"):
        return f".{target}" if node.op == "call_method" else str(target)
    if hasattr(target, "_schema"):  # an OpOverload
        return f"aten.{target._schema.name.split('::')[1]}"
    if type(target).__name__ == "Prim":
        return repr(target)  # prims.mul
    module = getattr(target, "__module__", None) or ""
    return f"{module.split('.')[0].replace('_operator', 'operator')}.{target.__name__}"


def fx_label(node):
    if node.op in ("placeholder", "output"):
        return node.name
    return f"{node.name}\n{short_target(node)}"


def fx_rows(graph):
    return layers(list(graph.nodes), lambda n: n.all_input_nodes)


def fx_graph(gm, width=4.0):
    """An FX graph, top to bottom, each node coloured by its `op`."""
    rows = fx_rows(gm.graph)
    fig, ax = canvas(width, ROW * len(rows) + 0.45)
    draw_dag(ax, rows, lambda n: n.all_input_nodes, fx_label, 0, 0, width,
             style=lambda n: {"colour": OP_COLOURS[n.op]})
    legend(ax, [("input", GREY, "#666666"), ("op", BLUE, "#666666"), ("output", ORANGE, "#666666")],
           ROW * len(rows) + 0.05)
    plt.show()


# --- the pipeline ------------------------------------------------------------------------------

def pipeline(stages, width=COLUMN):
    """Stages top to bottom: each is (name, package, artifact); an arrow carries the artifact down."""
    row = 0.95
    fig, ax = canvas(width, row * len(stages))
    for i, (name, package, artifact) in enumerate(stages):
        y = row * (i + 0.35)
        box(ax, 1.55, y, name, 2.9, 0.5, colour=BLUE, fontweight="bold")
        ax.text(3.15, y, package, va="center", family="monospace", fontsize=FONT)
        if i + 1 < len(stages):
            arrow(ax, (1.55, y + 0.25), (1.55, y + row - 0.25))
            ax.text(1.7, y + row / 2, artifact, va="center", fontsize=FONT, style="italic", color="#444444")
        else:
            ax.text(1.55, y + 0.42, artifact, ha="center", fontsize=FONT, style="italic", color="#444444")
    plt.show()


# --- graph breaks ------------------------------------------------------------------------------

def graph_cluster(ax, gm, top, title, width=COLUMN):
    """An FX graph inside a shaded band headed by `title`; returns the band's height."""
    rows = fx_rows(gm.graph)
    height = ROW * len(rows) + 0.45
    ax.add_patch(Rectangle((0.05, top), width - 0.1, height, facecolor="#f3f6fb", edgecolor="#9aaac4"))
    ax.text(0.2, top + 0.22, title, va="center", family="monospace", fontsize=FONT)
    draw_dag(ax, rows, lambda n: n.all_input_nodes, fx_label, 0.5, top + 0.4, width - 1,
             style=lambda n: {"colour": OP_COLOURS[n.op]})
    return height


def split_graph(before, after, eager_step, resume_title, width=COLUMN):
    """A function split by a graph break: the graph before it, the step Python runs, and the
    resume function that holds the graph after it, top to bottom."""
    heights = [ROW * len(fx_rows(gm.graph)) + 0.45 for gm in (before, after)]
    fig, ax = canvas(width, sum(heights) + 1.3)
    first = graph_cluster(ax, before, 0.05, "graph 1, called by the transformed function", width)
    step = first + 0.65
    arrow(ax, (width / 2, first + 0.05), (width / 2, step - 0.2))
    box(ax, width / 2, step, eager_step, text_width(eager_step) + 0.4, 0.4, colour=ORANGE, family="monospace")
    arrow(ax, (width / 2, step + 0.2), (width / 2, step + 0.6))
    graph_cluster(ax, after, step + 0.6, resume_title, width)
    plt.show()


# --- the frame ---------------------------------------------------------------------------------

def argument_count(code):
    """n: the slots of localsplus that hold the arguments (*args and **kwargs included)."""
    return code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)


def localsplus_groups(code):
    """(group, slot names, colour) of a code object's localsplus, in order."""
    n = argument_count(code)
    return [("parameters", list(code.co_varnames[:n]), BLUE),
            ("other locals", list(code.co_varnames[n:]), GREEN),
            ("cells", [c for c in code.co_cellvars if c not in code.co_varnames], ORANGE),
            ("free variables", list(code.co_freevars), "#e6b8e6")]


def frame_layout(code, width=COLUMN):
    """One `_PyInterpreterFrame` of `code`: fixed fields, then localsplus, then the value stack."""
    groups = [g for g in localsplus_groups(code) if g[1]]
    slots = sum(len(names) for _, names, _ in groups)
    slot = min(0.75, (width - 2.4) / slots)
    fig, ax = canvas(width, 1.75)
    y = 0.95
    box(ax, 0.6, y, "fixed\nfields", 1.0, 0.55, colour=GREY)
    x = 1.15
    for name, names, colour in groups:
        for i, slot_name in enumerate(names):
            box(ax, x + (i + 0.5) * slot, y, slot_name, slot - 0.04, 0.55, colour=colour, family="monospace")
        span = (x, x + len(names) * slot)
        ax.plot([span[0] + 0.03, span[0] + 0.03, span[1] - 0.03, span[1] - 0.03], [0.52, 0.45, 0.45, 0.52],
                color="#555555", linewidth=0.8)
        fits = span[1] - span[0] > text_width(name)
        ax.text(sum(span) / 2, 0.38, name if fits else name.replace(" ", "\n"), ha="center", va="bottom",
                fontsize=FONT)
        x = span[1]
    stack_width = width - x - 0.1
    box(ax, x + stack_width / 2, y, f"value stack\n{code.co_stacksize} slots", stack_width - 0.04, 0.55,
        colour="white", linestyle="--")
    n = argument_count(code)
    ax.annotate("", xy=(1.15, 1.38), xytext=(1.15 + n * slot, 1.38),
                arrowprops=dict(arrowstyle="<->", color=RED, linewidth=1))
    ax.text(1.15 + n * slot / 2, 1.45, f"localsplus[0:{n}]: set by the caller", ha="center", va="top",
            color=RED, fontsize=FONT)
    plt.show()


# --- joint graphs ------------------------------------------------------------------------------

PARTITION_COLOURS = {"input": GREY, "forward graph": BLUE, "backward graph": ORANGE,
                     "both (recomputed)": GREEN}


def partition_kind(node, forward, backward):
    """Where a partition put a node of the joint graph: which of the two graphs compute it."""
    in_fw = {n.name for n in forward.graph.nodes if n.op != "placeholder"}
    in_bw = {n.name for n in backward.graph.nodes if n.op != "placeholder"}
    if node.op == "placeholder":
        return "input"
    if node.name in in_fw and node.name in in_bw:
        return "both (recomputed)"
    return "forward graph" if node.name in in_fw else "backward graph"


def joint_graph(joint, num_fwd_outputs, forward, backward, width=COLUMN):
    """A joint graph: the forward in the left band, the backward in the right band, below it.

    Tangents enter after the forward's outputs; each node is coloured by the graph the partition
    put it in, and the values the forward saves for the backward have a red border.
    """
    nodes = [n for n in joint.graph.nodes if n.op != "output"]
    tangents = [n for n in nodes if n.name.startswith("tangents")]
    fw_outputs = joint.graph.output_node().args[0][:num_fwd_outputs]
    backward_nodes = set(tangents)
    for node in nodes:
        if any(i in backward_nodes for i in node.all_input_nodes):
            backward_nodes.add(node)
    ordered = [n for n in nodes if n not in backward_nodes] + [n for n in nodes if n in backward_nodes]
    rows = layers(ordered, lambda n: fw_outputs if n in tangents else n.all_input_nodes)
    saved = {n.name for n in backward.graph.find_nodes(op="placeholder") if not n.name.startswith("tangents")}
    bands = [[[n for n in row if (n in backward_nodes) == side] or [None] for row in rows] for side in (False, True)]
    columns = [max(len(row) for row in band) for band in bands]
    split = width * columns[0] / sum(columns)
    fig, ax = canvas(width, ROW * len(rows) + 0.5)
    centre = place(bands[0], 0, 0, split) | place(bands[1], split, 0, width - split)
    centre.pop(None, None)
    ax.axvline(split, color="#bbbbbb", linestyle="--", linewidth=0.8)

    def style(node):
        return {"colour": PARTITION_COLOURS[partition_kind(node, forward, backward)],
                "edge": RED if node.name in saved else "#666666", "linewidth": 2 if node.name in saved else 0.6}

    half = draw_nodes(ax, centre, lambda n: n.name, width / sum(columns) - 0.08, style)
    draw_edges(ax, centre, half, lambda n: n.all_input_nodes)
    entries = [(k, c, "#666666") for k, c in PARTITION_COLOURS.items()] + [("saved", "white", RED)]
    legend(ax, entries, ROW * len(rows) + 0.1, left=0)
    plt.show()


# --- fusion ------------------------------------------------------------------------------------

KERNEL_COLOURS = [BLUE, GREEN, ORANGE, "#e6b8e6", "#f4e19e", "#9edfe0"]


def member_label(node):
    """A scheduler node's buffer number, with Σ for a reduction: buf12 → "Σ12"."""
    reduction = getattr(node, "is_reduction", lambda: False)()
    return ("Σ" if reduction else "") + node.name.removeprefix("buf")


def draw_schedule(ax, scheduler, left, width, title, row_height=0.36):
    """One row per kernel, in the order they run: the scheduler nodes each kernel computes.

    A generated kernel's nodes share a colour; a hollow box is a local buffer, which never reaches
    memory; a grey box is an extern call.
    """
    kernels = scheduler.kernels
    ax.text(left + width / 2, 0.2, title, ha="center", va="center", fontsize=FONT, fontweight="bold")
    slots = max(len(getattr(k, "nodes", [k])) for k in kernels)
    slot = min(0.75, (width - 0.45) / slots)
    for k, kernel in enumerate(kernels):
        y = 0.55 + k * row_height
        ax.text(left + 0.35, y, f"k{k}", ha="right", va="center", fontsize=FONT, color="#555555")
        if not hasattr(kernel, "nodes"):  # an extern call
            box(ax, left + 0.45 + slot, y, f"{kernel.kernel.kernel_name()} → {member_label(kernel)}",
                2 * slot - 0.06, row_height - 0.08, colour=GREY)
            continue
        colour = KERNEL_COLOURS[k % len(KERNEL_COLOURS)]
        for i, node in enumerate(kernel.nodes):
            local = node.name in kernel.local_buffers
            box(ax, left + 0.45 + (i + 0.5) * slot, y, member_label(node), slot - 0.06, row_height - 0.08,
                colour="white" if local else colour, edge="#555555" if not local else "#888888",
                linestyle="--" if local else "-")


def schedules(forward, backward, width=COLUMN):
    """The kernels of a forward and a backward graph side by side."""
    rows = max(len(forward.kernels), len(backward.kernels))
    fig, ax = canvas(width, 0.55 + rows * 0.36 + 0.3)
    draw_schedule(ax, forward, 0, width / 2 - 0.1, f"forward: {len(forward.kernels)} kernels")
    draw_schedule(ax, backward, width / 2 + 0.1, width / 2 - 0.1, f"backward: {len(backward.kernels)} kernels")
    legend(ax, [("buffer written to memory", BLUE, "#555555"), ("local buffer", "white", "#888888"),
                ("extern call", GREY, "#555555")], 0.55 + rows * 0.36 - 0.1, left=0)
    plt.show()


# --- the loop IR -------------------------------------------------------------------------------

def loop_nest_text(buffer, read, write, index, rindex):
    """The loops that a one-dimensional Reduction over one reduction dimension stands for."""
    (x,), (r,) = index, rindex
    reduction = buffer.data.reduction_type
    return "\n".join([f"for {x} in range({x.size}):", f"    acc = identity of {reduction}",
                      f"    for {r} in range({r.size}):", f"        acc = {reduction}(acc, {read.name}[{read.index}])",
                      f"    {write.name}[{write.index}] = acc"])


def iteration_space(buffer, width=COLUMN):
    """A Reduction's loop nest, and its iteration space: one cell per (x0, r0), labelled with the
    input element it loads, and coloured by the output element it is reduced into."""
    from tinydynamo.inductor.dependencies import extract_read_writes
    from tinydynamo.inductor.ir import index_vars

    index, rindex = index_vars("x", buffer.data.ranges), index_vars("r", buffer.data.reduction_ranges)
    reads_writes = extract_read_writes(buffer, index, rindex)
    read, write = reads_writes.reads[0], reads_writes.writes[0]
    (x,), (r,) = index, rindex
    cell = min(0.42, (width - 1.4) / (r.size + 2))
    fig, ax = canvas(width, 2.0 + x.size * cell)
    ax.text(0.1, 0.1, loop_nest_text(buffer, read, write, index, rindex), va="top", family="monospace",
            fontsize=FONT)
    top, left = 1.35, 0.9
    ax.text(left + r.size * cell / 2, top - 0.12, f"{r}: reduction index →", ha="center", fontsize=FONT)
    ax.text(left - 0.12, top + x.size * cell / 2, f"{x} ↓", ha="right", va="center", fontsize=FONT)
    for i in range(x.size):
        colour = KERNEL_COLOURS[i % len(KERNEL_COLOURS)]
        for j in range(r.size):
            at = read.index.subs({x: i, r: j}).const
            ax.add_patch(Rectangle((left + j * cell, top + i * cell), cell, cell, facecolor=colour, edgecolor="white"))
            ax.text(left + (j + 0.5) * cell, top + (i + 0.5) * cell, str(at), ha="center", va="center",
                    fontsize=FONT - 1)
        out = left + (r.size + 1.2) * cell
        arrow(ax, (left + r.size * cell + 0.05, top + (i + 0.5) * cell), (out - 0.05, top + (i + 0.5) * cell))
        box(ax, out + 0.45, top + (i + 0.5) * cell, f"{write.name}[{write.index.subs({x: i}).const}]", 0.9,
            cell - 0.06, colour=colour, family="monospace")
    ax.text(left, top + x.size * cell + 0.12, f"each cell: the element of {read.name} it loads", va="top",
            fontsize=FONT, style="italic", color="#444444")
    plt.show()


# --- Triton ------------------------------------------------------------------------------------

def program_tiles(ax, xnumel, rnumel, config, programs, left, top, width, height):
    """The [xnumel, rnumel] tensor split among `programs` instances of [XBLOCK, RBLOCK] tiles."""
    rows = max(xnumel, programs * config.XBLOCK)
    row, column = height / rows, width / max(rnumel, config.RBLOCK)
    for p in range(programs):
        y = top + p * config.XBLOCK * row
        colour = KERNEL_COLOURS[p % len(KERNEL_COLOURS)]
        inside = min(config.XBLOCK, xnumel - p * config.XBLOCK)
        ax.add_patch(Rectangle((left, y), rnumel * column, inside * row, facecolor=colour, edgecolor="#555555"))
        for i in range(1, inside):  # one line between rows: a tile holds XBLOCK of them
            ax.plot([left, left + rnumel * column], [y + i * row] * 2, color="white", linewidth=0.5)
        if inside < config.XBLOCK:  # lanes past xnumel: masked off
            ax.add_patch(Rectangle((left, y + inside * row), config.RBLOCK * column, (config.XBLOCK - inside) * row,
                                   facecolor="white", edgecolor="#999999", hatch="///", linestyle="--"))
            ax.text(left + width / 2, y + (inside + config.XBLOCK) / 2 * row, "masked lanes (xmask false)",
                    ha="center", va="center", fontsize=FONT, backgroundcolor="white")
        label = f"program {p}: rows {p * config.XBLOCK}–{p * config.XBLOCK + inside - 1}"
        if config.XBLOCK * row >= 0.22:
            ax.text(left + width / 2, y + inside * row / 2, label, ha="center", va="center", fontsize=FONT)


def triton_grid(xnumel, rnumel, launches, width=COLUMN):
    """Side by side, for each (Config, grid) of `launches`: how the programs tile the tensor."""
    panel, height = width / len(launches), 2.6
    fig, ax = canvas(width, height + 0.9)
    for k, (config, grid) in enumerate(launches):
        left = k * panel + 0.3
        ax.text(left + (panel - 0.5) / 2, 0.2, f"XBLOCK={config.XBLOCK}, RBLOCK={config.RBLOCK}: grid {grid}",
                ha="center", fontsize=FONT, fontweight="bold")
        program_tiles(ax, xnumel, rnumel, config, grid[0], left, 0.45, panel - 0.5, height)
        ax.text(left + (panel - 0.5) / 2, height + 0.6, f"{rnumel} elements per row (r) →", ha="center",
                fontsize=FONT)
    plt.show()


# --- bytecode, guards and prims ----------------------------------------------------------------

def stack_depths(fn, width=COLUMN):
    """The value stack after each instruction of `fn` (straight-line code), one column each."""
    import dis

    instructions = list(dis.get_instructions(fn))
    depth, depths = 0, []
    for instr in instructions:
        depth += dis.stack_effect(instr.opcode, instr.arg if instr.opcode >= dis.HAVE_ARGUMENT else None)
        depths.append(depth)
    labels = [f"{instr.opname} {instr.argrepr}".strip() for instr in instructions]
    column, slot = width / len(instructions), 0.28
    top = 0.3 + slot * max(depths)
    fig, ax = canvas(width, top + 0.25 + text_width(max(labels, key=len), FONT - 1))
    for i, (label, d) in enumerate(zip(labels, depths)):
        x = (i + 0.5) * column
        for level in range(d):
            ax.add_patch(Rectangle((x - column * 0.35, top - (level + 1) * slot), column * 0.7, slot - 0.03,
                                   facecolor=BLUE, edgecolor="#555555", linewidth=0.6))
        ax.text(x, top + 0.08, label, rotation=90, ha="center", va="top",
                family="monospace", fontsize=FONT - 1)
    stacksize = fn.__code__.co_stacksize
    ax.plot([0, width], [top - stacksize * slot - 0.01] * 2, color=RED, linestyle="--", linewidth=1)
    ax.text(width - 0.05, top - stacksize * slot - 0.05, f"co_stacksize = {stacksize}", ha="right", va="bottom",
            color=RED, fontsize=FONT)
    plt.show()


def call_timeline(calls, width=COLUMN):
    """One row per call of a compiled function: what changed, and whether it compiled or hit the cache.

    `calls` are (description, compiled?) in call order.
    """
    row = 0.36
    fig, ax = canvas(width, row * len(calls) + 0.5)
    for i, (description, compiled) in enumerate(calls):
        y = 0.2 + (i + 0.5) * row
        ax.text(0.1, y, description, va="center", family="monospace", fontsize=FONT)
        box(ax, width - 0.9, y, "compiled" if compiled else "cache hit", 1.5, row - 0.08,
            colour=ORANGE if compiled else GREEN)
    plt.show()


def decomposition(aten_gm, prim_gm, width=COLUMN):
    """An aten graph and the prim graph it decomposed into, side by side; each prim node has the
    colour of the aten node it came from (its `meta["aten_node"]`)."""
    colours = {n.name: KERNEL_COLOURS[i % len(KERNEL_COLOURS)]
               for i, n in enumerate(n for n in aten_gm.graph.nodes if n.op == "call_function")}

    def style(node):
        origin = node.name if node.graph is aten_gm.graph else node.meta.get("aten_node")
        return {"colour": colours.get(origin, GREY if node.op == "placeholder" else "white")}

    rows = [fx_rows(gm.graph) for gm in (aten_gm, prim_gm)]
    split = width * 0.4
    fig, ax = canvas(width, ROW * max(map(len, rows)) + 0.5)
    for gm, graph_rows, left, band in ((aten_gm, rows[0], 0, split), (prim_gm, rows[1], split, width - split)):
        draw_dag(ax, graph_rows, lambda n: n.all_input_nodes, fx_label, left, 0.35, band, style)
    ax.text(split / 2, 0.15, "aten graph", ha="center", fontweight="bold", fontsize=FONT)
    ax.text(split + (width - split) / 2, 0.15, "prim graph", ha="center", fontweight="bold", fontsize=FONT)
    ax.axvline(split, color="#bbbbbb", linestyle="--", linewidth=0.8)
    plt.show()


CALL_COLOURS = {"compiled": ORANGE, "cache hit": GREEN, "eager": "#f2b6b0"}


def compile_grid(columns, rows, width=COLUMN, title="size"):
    """What each call of a compiled function did, for several compilers or policies side by side.

    `columns` label the calls (the size each call brings); `rows` are (label, outcomes), one outcome
    per call: "compiled", "cache hit" or "eager" (past the cache size limit).
    """
    label_width, row = 2.3, 0.34
    cell = (width - label_width - 0.1) / len(columns)
    fig, ax = canvas(width, row * (len(rows) + 1) + 0.55)
    ax.text(label_width - 0.1, 0.3, title, ha="right", va="center", fontsize=FONT, style="italic")
    for j, column in enumerate(columns):
        ax.text(label_width + (j + 0.5) * cell, 0.3, str(column), ha="center", va="center", fontsize=FONT)
    for i, (label, outcomes) in enumerate(rows):
        y = 0.3 + (i + 1) * row
        compiles = sum(outcome == "compiled" for outcome in outcomes)
        ax.text(label_width - 0.1, y, f"{label} ({compiles})", ha="right", va="center", fontsize=FONT)
        for j, outcome in enumerate(outcomes):
            box(ax, label_width + (j + 0.5) * cell, y, "", cell - 0.06, row - 0.08, colour=CALL_COLOURS[outcome])
    legend(ax, [(name, colour, "#666666") for name, colour in CALL_COLOURS.items()], 0.3 + (len(rows) + 0.5) * row)
    plt.show()


# --- distributed ---------------------------------------------------------------------------------

BUCKET_COLOURS = (BLUE, ORANGE, GREEN, "#d7b5e8", "#f4a6a6", "#bfe3e0")


def bucket_split(gm, buckets, width=COLUMN):
    """A graph with each node coloured by the DDP bucket it falls in (``buckets`` as
    ``bucket_nodes`` returns them: the last nodes of the graph first)."""
    bucket_of = {node: i for i, bucket in enumerate(buckets) for node in bucket.nodes}
    rows = fx_rows(gm.graph)
    fig, ax = canvas(width, ROW * len(rows) + 0.45)
    draw_dag(ax, rows, lambda n: n.all_input_nodes, fx_label, 0, 0, width,
             style=lambda n: {"colour": BUCKET_COLOURS[bucket_of[n] % len(BUCKET_COLOURS)] if n in bucket_of
                              else OP_COLOURS[n.op]})
    legend(ax, [("input / output", GREY, "#666666")] +
           [(f"piece of bucket {i}", BUCKET_COLOURS[i % len(BUCKET_COLOURS)], "#666666") for i in range(len(buckets))],
           ROW * len(rows) + 0.05)
    plt.show()


def event_timeline(timelines, width=COLUMN, unit="ms"):
    """One row per variant: a blue tick when a bucket's all-reduce is launched (labelled with the
    bucket, labels staggered on three levels), a red one when the input's gradient arrives; a
    time axis below."""
    row, left = 0.8, 2.3
    span = max(t for events in timelines.values() for _, t in events) * 1.05
    scale = (width - left - 0.3) / span
    fig, ax = canvas(width, row * len(timelines) + 0.9)
    for i, (variant, events) in enumerate(timelines.items()):
        y = (i + 0.75) * row
        ax.text(0.1, y, variant, va="center", fontsize=FONT)
        ax.plot([left, left + span * scale], [y, y], color="#999999", linewidth=0.8)
        buckets = [(label, t) for label, t in events if label != "input gradient"]
        for j, (label, t) in enumerate(sorted(buckets, key=lambda event: event[1])):
            ax.plot([left + t * scale] * 2, [y - 0.1, y + 0.1], color="#1f5fa8", linewidth=1.2)
            ax.text(left + t * scale, y - 0.14 - 0.13 * (j % 3), label.replace("all-reduce ", "b"),
                    ha="center", fontsize=7, color="#1f5fa8")
        for label, t in events:
            if label == "input gradient":
                ax.plot([left + t * scale] * 2, [y - 0.16, y + 0.16], color=RED, linewidth=2)
    axis_y = row * len(timelines) + 0.3
    step = nice_step(span)
    ax.plot([left, left + span * scale], [axis_y, axis_y], color="#444444", linewidth=0.8)
    for k in range(int(span // step) + 1):
        x = left + k * step * scale
        ax.plot([x, x], [axis_y, axis_y + 0.06], color="#444444", linewidth=0.8)
        ax.text(x, axis_y + 0.18, f"{k * step:g}", ha="center", fontsize=7.5)
    ax.text(0.1, axis_y + 0.18, f"{unit} after the backward starts", fontsize=7.5, va="center")
    ax.text(0.1, axis_y + 0.45, "blue b<i>: bucket i's all-reduce is launched;  red: the input's gradient "
            "arrives (the backward is done)", fontsize=7.5, va="center", color="#444444")
    plt.show()


def nice_step(span):
    """A round tick spacing that gives about five ticks over ``span``."""
    for step in (1, 2, 5, 10, 20, 25, 50, 100, 200, 500, 1000):
        if span / step <= 6:
            return step
    return span / 5


def fork_join_lanes(steps, width=COLUMN):
    """The steps of a ForkJoinProgram (its ``str()``, one line per step) on two lanes: the calling
    thread runs the pieces in order; each forked body runs on the pool from its fork to its wait."""
    step_width = (width - 1.9) / len(steps)
    x = lambda i: 1.8 + (i + 0.5) * step_width  # noqa: E731
    fig, ax = canvas(width, 1.0 + 0.45 * sum(s.startswith("fork") for s in steps) + 0.6)
    ax.text(0.1, 0.45, "calling thread", va="center", fontsize=FONT)
    ax.text(0.1, 1.05, "thread pool", va="center", fontsize=FONT)
    ax.plot([1.8, width - 0.1], [0.45, 0.45], color="#bbbbbb", linewidth=0.8)
    forks, lane = {}, 0
    for i, step in enumerate(steps):
        kind, rest = step.split(" ", 1)
        if kind == "fork":
            forks[rest.split(":")[0]] = (i, 1.05 + 0.45 * lane)
            lane += 1
            arrow(ax, (x(i), 0.5), (x(i), forks[rest.split(":")[0]][1] - 0.17))
        elif kind == "run":
            box(ax, x(i), 0.45, "piece", step_width * 0.8, 0.34, colour=BLUE)
        elif kind == "wait":
            name = rest.split(" ")[0]
            start, y = forks[name]
            box(ax, (x(start) + x(i)) / 2, y, f"body of {name}", x(i) - x(start), 0.3, colour=ORANGE)
            arrow(ax, (x(i), y - 0.15), (x(i), 0.62))
            ax.text(x(i), 0.2, "wait", ha="center", fontsize=7.5, color="#444444")
    plt.show()
