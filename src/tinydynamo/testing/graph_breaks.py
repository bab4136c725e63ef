"""Functions that break the graph, shared by the graph-break tests and assignment a05 (chapter 5).

Each breaks at a print, a ``.item()`` or a branch on a tensor, in the middle of an expression, a
``with torch.no_grad()`` block, a loop or a closure. ``tests/dynamo/graph_break_cases.py`` runs
them compiled and eagerly; ``tinydynamo.course.a05`` compiles them with a learner's resume
functions. They are plain functions: each user registers them with its own inputs.
"""
import torch


def print_in_the_middle(x):
    y = x.sin() + 1
    print("between the graphs")
    return y * 2


def print_first(x):
    print("before anything")
    return x.cos() - 1


def three_prints(x):
    x = x + 1
    print(1)
    x = x * 2
    print(2)
    x = x - 3
    print(3)
    return x


def helper_that_prints(t):
    print("in the helper")
    return t * 2


def in_place_then_print(x):
    x.add_(1)
    print("updated")
    x.mul_(2)
    return x


def print_inside_no_grad(x):
    y = x * 2
    with torch.no_grad():
        z = y * 3
        print("no grad here")
        w = z + 1
    return y + w, w.requires_grad, torch.is_grad_enabled()


def nested_grad_modes(x):
    with torch.no_grad():
        a = x * 2
        with torch.enable_grad():
            b = x * 3
            print("grad again")
            c = b + 1
        d = a + c
    return d, c.requires_grad, d.requires_grad


def cell_used_after_the_break(x):
    parts = [x * k for k in range(3)]
    print("parts")
    return parts[2] + x


def varargs_and_kwargs(x, *rest, scale=2.0, **extra):
    y = x * scale
    print("rest", rest, sorted(extra))
    return y + sum(rest) + extra.get("shift", 0)


def early_return(x):
    y = x.abs()
    if y.max() > 1:
        return y / y.max()
    return y


def and_of_tensors(x, y):
    if (x.sum() > 0) and (y.sum() > 0):
        return x + y
    return x - y


def item_in_a_while_loop(x):
    steps = 0
    while x.abs().max().item() > 0.5:
        x = x / 2
        steps += 1
    return x, steps


def returns_containers(x):
    out = {"a": x + 1}
    alias = out
    alias["b"] = x * 2
    print("containers")
    return out, [out["a"], alias["b"]], alias is out


def gradients_through_a_break(x):
    y = (x * 3).sin()
    print("middle")
    loss = (y * x).sum()
    loss.backward()
    return loss.detach(), x.grad.clone()
