"""``make demo`` runs the tiny GPT's training step through the whole stack and reports on it."""
import re

import tinydynamo
from tinydynamo.bench import demo


def test_demo_reports_every_stage(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(tinydynamo.config, "cache_dir", tinydynamo.config.cache_dir)  # restored afterwards
    monkeypatch.setattr(demo.tempfile, "mkdtemp", lambda prefix: str(tmp_path))
    demo.main()
    out = capsys.readouterr().out
    assert "== dynamo: 1 graph(s), 0 graph break(s)" in out
    assert "every gradient match eager" in out
    kernels = int(re.search(r"== inductor: (\d+) kernels in (\d+) C\+\+ files", out).group(1))
    assert kernels > 10
    assert str(tmp_path) in out and ".cpp" in out
    assert re.search(r"\d+\.\d+x speedup over eager", out)
