"""Compile generated C++ once, cache it on disk, load it with ctypes (chapter 10).

The cache key is a hash of the source and the compiler command, so a second process that
generates the same source finds ``<cache_dir>/cpp/<key>.so`` and compiles nothing. Files are
written under a temporary name and renamed into place (``os.replace`` is atomic), so two
processes compiling the same kernel at once never load a half-written library.

Every generated file starts with the same prelude, and parsing the C++ standard headers it
includes is half of a compile. So the prelude is also compiled once per cache directory into a
GCC *precompiled header* (``tinydynamo_prelude.h.gch``), and a file that starts with the prelude
is compiled with ``-include`` of it: the compiler loads the parsed headers, and the prelude's
include guard skips the file's own copy. The library is the same either way, so the cache key
ignores it, and a compiler that cannot use the precompiled header just reads the file's copy.
"""
import contextlib
import ctypes
import ctypes.util
import functools
import hashlib
import os
import platform
import subprocess
import sys
import tempfile

from .. import config
from .._logging import trace_artifact
from ..utils import counters

CXX = os.environ.get("CXX", "g++")
PRELUDE_PATH = os.path.join(os.path.dirname(__file__), "codegen", "cpp_prelude.h")
PRELUDE_HEADER = "tinydynamo_prelude.h"
# -fno-math-errno: math functions may be vectorized (we never read errno).
# -fwrapv: integer overflow wraps, as in torch, instead of being undefined behaviour.
# -fno-strict-aliasing: GCC 12 miscompiled a kernel with two masked loads in an ``omp simd``
#   loop under type-based alias analysis (test_cat_then_gelu_after_a_bool_kernel); the kernels
#   tell the compiler what does not alias with __restrict__ instead.
CXXFLAGS = ["-O3", "-march=native", "-mprefer-vector-width=512", "-fopenmp", "-fno-math-errno",
            "-fwrapv", "-fno-strict-aliasing", "-shared", "-fPIC"]

# glibc's libmvec has vector versions of these math functions; declaring them ``simd`` lets the
# compiler vectorize loops that call them (it otherwise does so only under -ffast-math).
VECTOR_MATH_FUNCTIONS = {"exp": 1, "log": 1, "log1p": 1, "expm1": 1, "sin": 1, "cos": 1,
                         "tanh": 1, "erf": 1, "pow": 2}


class CppCompileError(RuntimeError):
    """The C++ compiler rejected a generated kernel."""


@functools.lru_cache(None)
def _libmvec():
    path = ctypes.util.find_library("mvec")
    try:
        return ctypes.CDLL(path) if path else None
    except OSError:
        return None


@functools.lru_cache(None)
def vector_math_declarations():
    """``simd`` declarations for the math functions this machine's libmvec provides."""
    lib = _libmvec()
    if lib is None:
        return ""
    lines = ["", "// Vector versions of these come from glibc's libmvec."]
    for name, arity in VECTOR_MATH_FUNCTIONS.items():
        lanes = "v" * arity
        if hasattr(lib, f"_ZGVdN8{lanes}_{name}f") and hasattr(lib, f"_ZGVeN16{lanes}_{name}f"):
            args = ", ".join(["float"] * arity)
            lines.append(f'extern "C" float {name}f({args}) __attribute__((simd("notinbranch")));')
        if hasattr(lib, f"_ZGVdN4{lanes}_{name}") and hasattr(lib, f"_ZGVeN8{lanes}_{name}"):
            args = ", ".join(["double"] * arity)
            lines.append(f'extern "C" double {name}({args}) __attribute__((simd("notinbranch")));')
    return "\n".join(lines) + "\n"


@functools.lru_cache(None)
def prelude():
    """The text every generated file starts with: ``cpp_prelude.h``, the libmvec declarations,
    and an include guard around both."""
    with open(PRELUDE_PATH) as f:
        text = f.read() + vector_math_declarations()
    return f"#ifndef TINYDYNAMO_PRELUDE\n#define TINYDYNAMO_PRELUDE\n{text}#endif  // TINYDYNAMO_PRELUDE\n"


def compile_command(source_path, output_path, precompiled_prelude=None):
    libs = ["-lmvec"] if _libmvec() is not None else []
    include = ["-include", precompiled_prelude] if precompiled_prelude else []
    return [CXX, *CXXFLAGS, *include, source_path, "-o", output_path, *libs]


def precompiled_prelude():
    """The path of the prelude header in this cache directory, precompiled next to it on first
    use; None if the compiler could not precompile it."""
    key = hashlib.sha256("\n".join([prelude(), *CXXFLAGS, _compiler_version(), _cpu_features()])
                         .encode()).hexdigest()[:16]
    directory = os.path.join(config.cache_dir, "cpp", "prelude", key)
    header = os.path.join(directory, PRELUDE_HEADER)
    if not os.path.exists(header + ".gch"):
        os.makedirs(directory, exist_ok=True)
        _write_atomically(header, prelude())
        fd, tmp = tempfile.mkstemp(dir=directory, suffix=".gch.tmp")
        os.close(fd)
        flags = [flag for flag in CXXFLAGS if flag != "-shared"]
        result = subprocess.run([CXX, *flags, "-x", "c++-header", header, "-o", tmp], capture_output=True)
        if result.returncode != 0:
            with contextlib.suppress(FileNotFoundError):  # the compiler may have removed it
                os.unlink(tmp)
            return None
        os.replace(tmp, header + ".gch")
    return header


@functools.lru_cache(None)
def _compiler_version():
    return subprocess.run([CXX, "--version"], capture_output=True, text=True).stdout


@functools.lru_cache(None)
def _cpu_features():
    """-march=native code only runs on CPUs like this one: part of the cache key."""
    try:
        with open("/proc/cpuinfo") as f:
            return next((line for line in f if line.startswith("flags")), "")
    except OSError:
        return platform.machine()


def cache_key(source):
    text = "\n".join([source, " ".join(compile_command("src", "out")), _compiler_version(),
                      _cpu_features()])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


_loaded = {}  # key -> ctypes.CDLL, for this process


def clear():
    """Forget the libraries loaded in this process (the files on disk stay, as a cache), and the
    Triton kernel modules too, if any graph was compiled to Triton."""
    _loaded.clear()
    triton_kernels = sys.modules.get(f"{__package__}.runtime.triton_codecache")
    if triton_kernels is not None:  # not imported (with triton) until a graph needs it
        triton_kernels.clear()


def load(source):
    """The loaded shared library for ``source``, compiling it only if no cached copy exists."""
    key = cache_key(source)
    if key in _loaded:
        return _loaded[key]
    directory = os.path.join(config.cache_dir, "cpp", key[:2])
    os.makedirs(directory, exist_ok=True)
    source_path = os.path.join(directory, f"{key}.cpp")
    library_path = os.path.join(directory, f"{key}.so")
    if not os.path.exists(library_path):
        _write_atomically(source_path, source)
        _compile(source_path, library_path, precompiled_prelude() if source.startswith(prelude()) else None)
    _loaded[key] = ctypes.CDLL(library_path)
    return _loaded[key]


def _write_atomically(path, text):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def _compile(source_path, library_path, precompiled_prelude=None):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(library_path), suffix=".so.tmp")
    os.close(fd)
    command = compile_command(source_path, tmp, precompiled_prelude)
    counters["cpp_compiles"] += 1
    trace_artifact("kernels", lambda: "compiling: " + " ".join(command))
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        with contextlib.suppress(FileNotFoundError):  # the compiler may have removed it
            os.unlink(tmp)
        raise CppCompileError(
            f"C++ compilation of the generated kernel {source_path} failed:\n{result.stderr.strip()}")
    os.replace(tmp, library_path)
