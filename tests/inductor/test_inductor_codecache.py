"""The on-disk kernel cache, compiler errors, and the suppress_errors fallback."""
import os
import subprocess
import sys
import textwrap

import pytest
import torch

from inductor_helpers import assert_same, torch_graph
from tinydynamo import config
from tinydynamo.inductor import codecache, compile_fx_inner
from tinydynamo.inductor.codegen.cpp import CppOverrides
from tinydynamo.utils import counters

# Compiles a graph in a fresh process and prints how many times it ran the C++ compiler.
CHILD = textwrap.dedent("""
    import sys, torch
    from torch.fx.experimental.proxy_tensor import make_fx
    from tinydynamo import config
    from tinydynamo.inductor import compile_fx_inner
    from tinydynamo.prims import decompose
    from tinydynamo.utils import counters
    config.cache_dir = sys.argv[1]
    x = torch.arange(12.0).reshape(3, 4)
    fn = lambda x: torch.log_softmax(x, 1) * 3
    compiled = compile_fx_inner(decompose(make_fx(fn)(x), [x]), [x])
    torch.testing.assert_close(compiled(x), fn(x))
    print(counters["cpp_compiles"])
""")


def _compiles_in_child(cache_dir):
    result = subprocess.run([sys.executable, "-c", CHILD, str(cache_dir)], capture_output=True,
                            text=True, check=True)
    return int(result.stdout.split()[-1])


def test_a_second_process_compiles_nothing(tmp_path):
    assert _compiles_in_child(tmp_path) == 1
    assert _compiles_in_child(tmp_path) == 0
    files = sorted(p.suffix for p in tmp_path.rglob("*") if p.is_file())
    assert files == [".cpp", ".gch", ".h", ".so"]  # the kernel, the prelude; no temporary file


def test_a_file_that_starts_with_the_prelude_is_compiled_with_the_precompiled_header(tmp_path, monkeypatch):
    commands = []
    compile_command = codecache.compile_command
    monkeypatch.setattr(codecache, "compile_command", lambda *a: commands.append(a) or compile_command(*a))
    x = torch.randn(6, 5)
    with config.patch(cache_dir=str(tmp_path)):
        fn = lambda x: torch.tanh(x).sum(1)  # noqa: E731
        assert_same(compile_fx_inner(torch_graph(fn, [x]), [x])(x), fn(x))
        header = codecache.precompiled_prelude()
    assert os.path.exists(header + ".gch") and header.startswith(str(tmp_path))
    (source_path, _, precompiled), = [c for c in commands if c[0].endswith(".cpp")]
    assert precompiled == header
    with open(source_path) as f:  # the file on disk is still complete: it compiles on its own
        assert f.read().startswith(codecache.prelude())
    subprocess.run(codecache.compile_command(source_path, str(tmp_path / "alone.so")), check=True)


def test_a_corrupt_precompiled_header_is_ignored(tmp_path):
    x = torch.randn(4, 7)
    with config.patch(cache_dir=str(tmp_path)):
        header = codecache.precompiled_prelude()
        with open(header + ".gch", "wb") as f:
            f.write(b"not a precompiled header")
        fn = lambda x: torch.exp(x) - x.amax(1, keepdim=True)  # noqa: E731
        assert_same(compile_fx_inner(torch_graph(fn, [x]), [x])(x), fn(x))


def test_a_prelude_the_compiler_rejects_is_not_precompiled(tmp_path, monkeypatch):
    monkeypatch.setattr(codecache, "prelude", lambda: "#error this prelude does not compile\n")
    with config.patch(cache_dir=str(tmp_path)):
        assert codecache.precompiled_prelude() is None
    assert not list(tmp_path.rglob("*.gch*"))


def test_the_same_graph_compiles_once_per_process(tmp_path):
    x = torch.randn(5, 3)
    with config.patch(cache_dir=str(tmp_path)):
        before = counters["cpp_compiles"]
        for _ in range(2):
            compile_fx_inner(torch_graph(lambda x: torch.cos(x) * 2, [x]), [x])
        assert counters["cpp_compiles"] == before + 1


@pytest.fixture
def broken_exp(monkeypatch):
    """Make the code generator write a call to a function that does not exist."""
    monkeypatch.setattr(CppOverrides, "exp", staticmethod(lambda x: f"no_such_function({x})"))


def test_a_compiler_error_names_the_source_file_and_quotes_the_compiler(broken_exp, tmp_path):
    x = torch.randn(4)
    with config.patch(cache_dir=str(tmp_path), suppress_errors=False):
        with pytest.raises(codecache.CppCompileError) as info:
            compile_fx_inner(torch_graph(lambda x: torch.exp(x) + 1, [x]), [x])
    message = str(info.value)
    path = message.split("kernel ")[1].split(" failed")[0]
    assert os.path.exists(path) and "no_such_function" in open(path).read()
    assert "error:" in message and "no_such_function" in message


def test_suppress_errors_falls_back_to_running_the_prims_eagerly(broken_exp, tmp_path):
    x = torch.randn(4)
    fn = lambda x: torch.exp(x) + 1  # noqa: E731
    before = counters["fallbacks"]
    with config.patch(cache_dir=str(tmp_path), suppress_errors=True):
        with pytest.warns(UserWarning, match="running its prims eagerly"):
            compiled = compile_fx_inner(torch_graph(fn, [x]), [x])
    assert counters["fallbacks"] == before + 1
    assert_same(compiled(x), fn(x))
