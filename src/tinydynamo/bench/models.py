"""Real models at realistic sizes: ``python -m tinydynamo.bench --models`` (chapter 13).

Six ``transformers`` architectures, each built from a config with random weights (nothing is
downloaded; set ``HF_HUB_OFFLINE=1``), each timed for inference (eval mode, a forward under
``no_grad``) and for a training step (train mode, the forward with labels, the model's own loss,
its backward), eagerly, by ``torch.compile`` and by tinydynamo, interleaved as in ``harness``.

The widths, heads, feed-forward sizes and sequence lengths are the real models' own:

- ``gpt2``: GPT-2 small (768 wide, 12 heads, feed-forward 3072), 512 tokens;
- ``llama``: SmolLM-135M, a LLaMA (576 wide, 9 heads sharing 3 key/value heads, SwiGLU 1536,
  rotary positions), 512 tokens;
- ``bert``: BERT-base (768, 12 heads, 3072), 128 tokens, batch 8;
- ``distilbert``: DistilBERT-base (768, 12 heads, 3072), 128 tokens, batch 8;
- ``t5``: T5-small (512 wide, 8 heads, feed-forward 2048, relative position buckets), 128 tokens
  in and 128 out, batch 8;
- ``vit``: ViT-base (224 px in 16-px patches: 197 tokens of 768, 12 heads, 3072), batch 4.

What is reduced, so that the whole run (12 cells, each compiled cold by two compilers) fits in
about 20 minutes on 2 CPU cores:

- **2 layers** (1 encoder and 1 decoder layer for T5) instead of 6 to 12: the layers are
  identical, so a compiler's work per layer, and its speed on it, are the same;
- **a vocabulary of 8192** instead of 30k to 50k: with 2 layers instead of 12, the full
  vocabulary's output projection would take most of the time (a matmul that every variant
  hands to the same BLAS), where in the real model it takes a fifth of it;
- **batch 1** for the decoders at 512 tokens, so that one eager forward stays under about 0.5 s.

``--quick`` shrinks every model to a tiny config (64 wide, 4 heads, 16 tokens, 32 px), for tests.
Every dropout is 0, so the training step is deterministic and checked like inference: the loss
and every parameter's gradient against eager's.
"""
import dataclasses
import time
import traceback
from typing import Callable

import torch

from . import harness
from ..testing.real_models import outputs_to_tensors

VOCAB = 8192
RTOL = 1e-3  # and an absolute tolerance of RTOL times the tensor's largest magnitude,
ATOL_FLOOR = 1e-7  # at least this: a key bias's gradient is 0 in exact arithmetic, 1e-12 in float32
MODES = ("inference", "training")


@dataclasses.dataclass(frozen=True)
class ModelWorkload:
    name: str
    category: str  # decoder, encoder, seq2seq, vision
    model_class: str  # a transformers class, built from ``model_class.config_class(**config)``
    config: dict  # the realistic size
    quick_config: dict  # overrides for --quick
    inputs: Callable  # inputs(batch, length, vocab) -> kwargs, labels included
    batch: int
    length: int  # tokens, or the image's side in pixels
    description: str

    def build(self, quick):
        """(model, kwargs), seeded: the same weights and inputs every time."""
        import transformers

        cls = getattr(transformers, self.model_class)
        config = dict(self.config, **(self.quick_config if quick else {}))
        torch.manual_seed(0)
        model = cls(cls.config_class(**config))
        torch.manual_seed(1)
        batch, length = (2, 32 if self.category == "vision" else 16) if quick else (self.batch, self.length)
        return model, self.inputs(batch, length, config.get("vocab_size"))


def tokens(batch, length, vocab):
    """input_ids, labels, and an attention mask whose last row ends in 8 padding tokens."""
    input_ids = torch.randint(3, vocab, (batch, length))
    attention_mask = torch.ones(batch, length, dtype=torch.long)
    attention_mask[-1, -8:] = 0
    return dict(input_ids=input_ids, attention_mask=attention_mask, labels=input_ids.clone())


def seq2seq_tokens(batch, length, vocab):
    """As ``tokens``, with the decoder's inputs (the labels shifted right) for a call without labels."""
    kwargs = tokens(batch, length, vocab)
    decoder_input_ids = torch.cat([torch.zeros(batch, 1, dtype=torch.long), kwargs["labels"][:, :-1]], 1)
    return dict(kwargs, decoder_input_ids=decoder_input_ids)


def image(batch, length, vocab):
    return dict(pixel_values=torch.randn(batch, 3, length, length), labels=torch.randint(0, 10, (batch,)))


_QUICK_TEXT = dict(hidden_size=64, num_attention_heads=4, intermediate_size=128, vocab_size=1000)

WORKLOADS = {w.name: w for w in (
    ModelWorkload("gpt2", "decoder", "GPT2LMHeadModel",
                  dict(vocab_size=VOCAB, n_embd=768, n_head=12, n_layer=2, n_positions=1024, resid_pdrop=0.0,
                       embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=1, eos_token_id=2, use_cache=False),
                  dict(n_embd=64, n_head=4, vocab_size=1000), tokens, 1, 512,
                  "GPT-2 small shapes, 2 layers, seq 512, batch 1"),
    ModelWorkload("llama", "decoder", "LlamaForCausalLM",
                  dict(vocab_size=VOCAB, hidden_size=576, num_attention_heads=9, num_key_value_heads=3,
                       intermediate_size=1536, num_hidden_layers=2, max_position_embeddings=2048,
                       attention_dropout=0.0, use_cache=False),
                  dict(_QUICK_TEXT, num_key_value_heads=2), tokens, 1, 512,
                  "SmolLM-135M (LLaMA) shapes, 2 layers, seq 512, batch 1"),
    ModelWorkload("bert", "encoder", "BertForMaskedLM",
                  dict(vocab_size=VOCAB, hidden_size=768, num_attention_heads=12, intermediate_size=3072,
                       num_hidden_layers=2, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0),
                  _QUICK_TEXT, tokens, 8, 128, "BERT-base shapes, 2 layers, seq 128, batch 8"),
    ModelWorkload("distilbert", "encoder", "DistilBertForMaskedLM",
                  dict(vocab_size=VOCAB, dim=768, n_heads=12, hidden_dim=3072, n_layers=2, dropout=0.0,
                       attention_dropout=0.0),
                  dict(dim=64, n_heads=4, hidden_dim=128, vocab_size=1000), tokens, 8, 128,
                  "DistilBERT-base shapes, 2 layers, seq 128, batch 8"),
    ModelWorkload("t5", "seq2seq", "T5ForConditionalGeneration",
                  dict(vocab_size=VOCAB, d_model=512, d_kv=64, d_ff=2048, num_heads=8, num_layers=1,
                       num_decoder_layers=1, dropout_rate=0.0, decoder_start_token_id=0, pad_token_id=0,
                       use_cache=False),
                  dict(d_model=64, d_kv=16, d_ff=128, num_heads=4, vocab_size=1000), seq2seq_tokens, 8, 128,
                  "T5-small shapes, 1+1 layers, seq 128 in and out, batch 8"),
    ModelWorkload("vit", "vision", "ViTForImageClassification",
                  dict(image_size=224, patch_size=16, hidden_size=768, num_attention_heads=12,
                       intermediate_size=3072, num_hidden_layers=2, hidden_dropout_prob=0.0,
                       attention_probs_dropout_prob=0.0, num_labels=10),
                  dict(_QUICK_TEXT, image_size=32, patch_size=8), image, 4, 224,
                  "ViT-base shapes, 2 layers, 224 px (197 tokens), batch 4"),
)}


def make_call(model, kwargs, mode):
    """The zero-argument call that is timed; it returns every tensor to check against eager."""
    if mode == "inference":
        inputs = {k: v for k, v in kwargs.items() if k != "labels"}

        def forward():
            with torch.no_grad():
                return outputs_to_tensors(model(**inputs))

        return forward
    params = list(model.parameters())

    def training_step():
        for p in params:
            p.grad = None
        loss = model(**kwargs).loss
        loss.backward()
        return [loss.detach()] + [p.grad for p in params]

    return training_step


def check(reference, result):
    """None, or what differs: tensor by tensor, within RTOL of the tensor's largest magnitude."""
    if len(result) != len(reference):
        return f"{len(result)} tensors, eager has {len(reference)}"
    for i, (expected, got) in enumerate(zip(reference, result)):
        if (expected is None) != (got is None):
            return f"tensor {i}: None on one side only"
        scale = expected.abs().max().item() if expected is not None and expected.numel() else 0.0
        try:
            torch.testing.assert_close(got, expected, rtol=RTOL, atol=max(RTOL * scale, ATOL_FLOOR))
        except AssertionError as e:
            return f"tensor {i} differs from eager: " + str(e).splitlines()[0]
    return None


def prepare(workload, mode, variant, quick, reference):
    """Build, compile and call the variant once; returns (call, VariantResult, result)."""
    result = harness.VariantResult(variant)
    try:
        model, kwargs = workload.build(quick)
        model.train(mode == "training")
        call = make_call(harness.compile_variant(variant, model, "inductor"), kwargs, mode)
        start = time.perf_counter()
        out = call()
        result.first_call_s = time.perf_counter() - start
        if reference is not None:
            result.error = check(reference, out)
        return call, result, out
    except Exception as e:  # noqa: BLE001 - a failing variant is reported in the table, not hidden
        where = traceback.extract_tb(e.__traceback__)[-1]
        message = str(e).splitlines()[0] if str(e) else ""
        result.error = f"{type(e).__name__}: {message} (raised at {where.filename}:{where.lineno})"
        return None, result, None


def run_cell(workload, mode, quick, rounds):
    """One model in one mode: every variant compiled, checked, then timed in interleaved rounds.

    Both compilers' in-memory caches are cleared first: transformers' models share decorated
    forwards, and past 8 compiled versions of one (torch.compile's recompile limit, and
    tinydynamo's ``cache_size_limit``) a compiler would run it eagerly."""
    import tinydynamo

    torch.compiler.reset()
    tinydynamo.reset()
    calls, results, reference = {}, {}, None
    graphs_before = tinydynamo.stats()["graphs"]
    for variant in harness.VARIANTS:
        call, result, out = prepare(workload, mode, variant, quick, reference)
        if variant == "eager":
            reference = out
        if variant == "tinydynamo" and result.error is None and tinydynamo.stats()["graphs"] == graphs_before:
            result.error = "tinydynamo captured no graph: the model ran eagerly"
        results[variant] = result
        if call is not None and result.error is None:
            calls[variant] = call
    if "eager" not in calls:
        raise RuntimeError(f"eager {mode} of {workload.name} failed: {results['eager'].error}")
    calls_per_sample = harness._calls_per_sample(calls["eager"], "cpu", 0.01 if quick else 0.2)
    harness._interleave(calls, results, "cpu", rounds, calls_per_sample)
    return summarize(workload, mode, results)


def summarize(workload, mode, results):
    eager, compiled, ours = (results[v] for v in harness.VARIANTS)
    for result in results.values():
        if result.median_s is not None:
            result.speedup = eager.median_s / result.median_s
    return {
        "name": workload.name, "category": workload.category, "mode": mode, "description": workload.description,
        "variants": {v: dataclasses.asdict(r) for v, r in results.items()},
        "tinydynamo_over_torch_compile": _ratio(ours.median_s, compiled.median_s),
        "compile_time_ratio": (_ratio(ours.first_call_s, compiled.first_call_s)
                               if ours.error is None and compiled.error is None else None),
    }


def _ratio(a, b):
    return a / b if a is not None and b else None


def run(names=None, quick=False, rounds=None):
    """A row (a dict) for every named model (all by default) in every mode."""
    rounds = rounds or (3 if quick else 5)
    return [run_cell(WORKLOADS[name], mode, quick, rounds) for name in names or WORKLOADS for mode in MODES]


def summary(rows):
    """Geomeans over the rows where both compilers ran and were right."""
    def geo(key):
        return harness.geomean([r[key] for r in rows if r[key]])

    faster = [r["tinydynamo_over_torch_compile"] < 1 for r in rows if r["tinydynamo_over_torch_compile"]]
    return {"geomean_tinydynamo_over_torch_compile": geo("tinydynamo_over_torch_compile"),
            "geomean_compile_time_ratio": geo("compile_time_ratio"),
            "faster_than_torch_compile": f"{sum(faster)} of {len(rows)}"}


def _ms(result):
    if result["error"]:
        return f"failed: {result['error'][:60]}"
    return f"{result['median_s'] * 1e3:.1f}"


def _x(value):
    return "-" if value is None else f"{value:.2f}"


def _s(value):
    return "-" if value is None else f"{value:.1f}"


def to_markdown(rows, environment):
    lines = [("Quick mode: tiny configs, not the sizes described. " if environment["quick"] else "")
             + f"{environment['cpu_count']} CPU cores, load average {environment['load_average_1min']:.2f} at "
             "the start. Times are medians of interleaved rounds; compile time is the first call's.", "",
             "| model | mode | eager ms | torch.compile ms | tinydynamo ms | tinydynamo / torch.compile "
             "| compile s: torch.compile | tinydynamo | ratio |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        v = r["variants"]
        lines.append(f"| {r['description']} | {r['mode']} | " + " | ".join(_ms(v[n]) for n in harness.VARIANTS)
                     + f" | {_x(r['tinydynamo_over_torch_compile'])} | {_s(v['torch.compile']['first_call_s'])}"
                     f" | {_s(v['tinydynamo']['first_call_s'])} | {_x(r['compile_time_ratio'])} |")
    s = summary(rows)
    lines += ["", f"tinydynamo is faster than torch.compile in {s['faster_than_torch_compile']} cells; geomean "
              f"time ratio tinydynamo / torch.compile {_x(s['geomean_tinydynamo_over_torch_compile'])}, "
              f"compile time ratio {_x(s['geomean_compile_time_ratio'])}."]
    return "\n".join(lines)

