"""Trace rules: which code is compiled, and which calls are traced into (book chapter 4,
"Guards and the transformed code").

When the frame hook meets a code object for the first time, ``skip_reason`` decides whether
its frames are ever translated. The code that is skipped: torch and tinydynamo themselves, the
standard library, installed packages that do not compute with tensors, code made by exec/eval
that is not the user's (dataclass ``__init__`` methods, FX's generated forwards), generators and
comprehension bodies. The user's own code run by ``exec`` or ``python -c`` is compiled. A skipped code object is marked once (``set_skip``) and the hook never
calls back for it again. Installed model libraries (transformers, diffusers...) are compiled like
the user's own code.

While tracing, ``inline_refusal`` decides whether a call can be traced into: torch's own Python
functions are not, except the few files listed here (``nn.Module`` forwards, the grad-mode
decorators, parametrizations).

PyTorch's Dynamo keeps the same decisions in ``torch/_dynamo/trace_rules.py``.
"""
import inspect
import os
import sysconfig

import torch

import tinydynamo

from .resume_execution import ContinueExecutionCache

TORCH_DIR = os.path.dirname(torch.__file__) + os.sep  # (with the separator: not torch_geometric/)
GENERATOR_FLAGS = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR | \
    inspect.CO_ITERABLE_COROUTINE
SKIPPED_NAMES = ("<genexpr>", "<listcomp>", "<dictcomp>", "<setcomp>", "<module>")
# Code made by exec/eval (FX, guards) and frozen modules. (Also "<string>": see stdlib_exec_code.)
SKIPPED_PREFIXES = ("<eval_with_key>", "<tinydynamo", "<frozen")
# Installed packages whose frames are never compiled, as in Dynamo's skip list: libraries that
# do not compute with tensors, and the tools around a program (packaging, test runners,
# notebooks). Other installed packages (model libraries) are compiled like user code.
SKIPPED_PACKAGES = frozenset({
    "_distutils_hack", "setuptools", "pkg_resources", "pip", "importlib_metadata", "typing_extensions",
    "numpy", "scipy", "pandas", "sklearn", "sympy", "mpmath", "networkx", "hypothesis", "tqdm", "tabulate",
    "pytest", "_pytest", "pluggy", "IPython", "ipykernel", "jupyter_client", "jupyter_core", "traitlets",
    "tornado", "zmq", "comm", "debugpy", "nbformat", "nbclient", "nbconvert", "nbgrader", "myst_nb",
    "jupyter_book", "sphinx", "docutils", "jinja2", "markupsafe", "triton", "filelock", "fsspec",
    "matplotlib", "PIL", "onnx", "onnxruntime", "tensorflow", "omegaconf", "dateutil", "anyio",
    "psutil", "packaging", "platformdirs", "pygments", "prompt_toolkit", "jedi", "parso",
    "executing", "asttokens", "stack_data", "decorator", "nest_asyncio", "ipywidgets",
})
TORCH_MODULES_DIR = os.path.join(TORCH_DIR, "nn", "modules") + os.sep
TINYDYNAMO_DIR = os.path.dirname(tinydynamo.__file__) + os.sep
# tinydynamo's own user-level code: the model zoo, benchmark workloads, assignment corpora.
USER_CODE_DIRS = tuple(os.path.join(TINYDYNAMO_DIR, d) + os.sep for d in ("testing", "bench", "course"))
STDLIB_DIRS = tuple({sysconfig.get_paths()["stdlib"] + os.sep, sysconfig.get_paths()["platstdlib"] + os.sep})
# torch's Python code that is traced into: nn.Module forwards, the decorators that wrap a user's
# function (``@torch.no_grad()``), parametrizations (weight norm) that compute a weight, and
# torch.distributions (a policy's Normal or Categorical, a VAE's log-likelihood).
INLINABLE_TORCH_FILES = (os.path.join(TORCH_DIR, "nn", "modules", ""),
                         os.path.join(TORCH_DIR, "utils", "_contextlib.py"),
                         os.path.join(TORCH_DIR, "autograd", "grad_mode.py"),
                         os.path.join(TORCH_DIR, "amp", "autocast_mode.py"),  # @torch.autocast(...)'s wrapper
                         os.path.join(TORCH_DIR, "nn", "utils", "parametrize.py"),
                         os.path.join(TORCH_DIR, "nn", "utils", "parametrizations.py"),
                         os.path.join(TORCH_DIR, "distributions", ""))


def skip_reason(code):
    """Why frames of ``code`` are never compiled, or None."""
    file = code.co_filename
    if code.co_flags & GENERATOR_FLAGS:
        return "generators and coroutines are not compiled"
    if code.co_name in SKIPPED_NAMES:
        return f"{code.co_name} code"
    if stdlib_exec_code(code):
        return "generated code"
    if file.startswith(TORCH_MODULES_DIR) and ContinueExecutionCache.original(code, 0)[0].co_name == "forward":
        return None  # the forward of torch.nn's own modules, called on their own (or its resume functions)
    return library_file(file)


def stdlib_exec_code(code):
    """Methods that dataclasses and namedtuples make with exec/eval (file ``<string>``, like a user's
    code run by exec or ``python -c``, which is compiled)."""
    return code.co_filename == "<string>" and (code.co_qualname.startswith("__create_fn__.")
                                               or code.co_names == ("_tuple_new",))


def library_file(file):
    """Why code in ``file`` is not the user's own (torch, the standard library...), or None."""
    if file.startswith(SKIPPED_PREFIXES):
        return "generated code"
    if file.startswith(TORCH_DIR):
        return "torch"
    if file.startswith(TINYDYNAMO_DIR) and not file.startswith(USER_CODE_DIRS):
        return "tinydynamo"
    if file.startswith(STDLIB_DIRS) and "site-packages" not in file:
        return "the standard library"
    if installed_package(file) in SKIPPED_PACKAGES:
        return f"the installed package {installed_package(file)}"
    return None


def installed_package(file):
    """The top-level package an installed file belongs to (``numpy`` for
    ``.../site-packages/numpy/core/x.py``), or None for a file outside site-packages."""
    parts = file.split(os.sep)
    for i, part in enumerate(parts[:-1]):
        if part in ("site-packages", "dist-packages"):
            return parts[i + 1].removesuffix(".py")
    return None


def inside_functorch_transform():
    """Whether a functorch transform (``torch.vmap``, ``torch.func.grad``) is running: the frames
    it calls see batched or wrapped tensors, which are not traced. Each such call runs as Python."""
    return torch._C._functorch.peek_interpreter_stack() is not None


def inline_refusal(code):
    """Why a call of ``code`` cannot be traced into while tracing, or None."""
    if code.co_filename.startswith(TORCH_DIR) and not code.co_filename.startswith(INLINABLE_TORCH_FILES):
        return f"calling torch's internal Python function {code.co_qualname}"
    if code.co_flags & (inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR | inspect.CO_ITERABLE_COROUTINE):
        return f"calling the coroutine {code.co_qualname}"
    return None
