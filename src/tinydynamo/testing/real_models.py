"""Real models from pip packages, tiny and randomly initialised: the suite behind book chapter 5.

PyTorch 2 measured its compiler on the HuggingFace, TIMM and TorchBench suites. This registry
plays that part for tinydynamo: the same architectures, built from ``transformers``,
``diffusers`` and ``torch_geometric`` with tiny configs (hidden size at most 64, at most 2
layers, vocabulary at most 1000, batch 2, sequence 16, images of 32 or 64 px) and random weights, so
nothing is downloaded. Book chapter 5 (graph breaks) renders the table that
``tests/models/real_model_check.py`` makes from it.

Each entry is a :class:`RealModel`::

    entry = REAL_MODELS["llama"]
    model, args, kwargs = entry.build()        # seeded, in eval mode
    loss = entry.loss(model(*args, **kwargs))  # a scalar, for a training step
    outputs_to_tensors(model(*args, **kwargs)) # every output tensor, for comparisons

Every dropout probability in the configs is 0, so a training step is as deterministic as eval.
``fast=True`` marks six cheap models (GPT-2, BERT, BART, ViT, ResNet, GCN) that ``make test`` runs.
"""
import dataclasses
from typing import Callable

import torch

BATCH, SEQ, VOCAB, HIDDEN, IMAGE = 2, 16, 1000, 64, 32


@dataclasses.dataclass(frozen=True)
class RealModel:
    name: str  # "gpt2", "llama", ...
    package: str  # "transformers", "diffusers" or "torch_geometric"
    category: str  # decoder, encoder, seq2seq, vision, audio, multimodal, diffusion, gnn
    build: Callable[[], tuple]  # () -> (model in eval mode, args, kwargs), seeded
    loss: Callable[[object], torch.Tensor]  # the model's output -> a scalar for a training step
    fast: bool = False  # in the fast subset that ``make test`` runs


def outputs_to_tensors(out):
    """Every tensor in a model's output (ModelOutput, tuple, list, dict or tensor), None skipped."""
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, dict):  # transformers' ModelOutput and diffusers' BaseOutput are dicts
        out = list(out.values())
    if isinstance(out, (tuple, list)):
        return [t for item in out for t in outputs_to_tensors(item)]
    return []


# ---- inputs (each made right after torch.manual_seed(1), by _builder) ----

def _tokens(labels=True):
    """input_ids and an attention mask whose second row ends in 4 padding tokens."""
    input_ids = torch.randint(3, VOCAB, (BATCH, SEQ))
    attention_mask = torch.ones(BATCH, SEQ, dtype=torch.long)
    attention_mask[1, -4:] = 0
    kwargs = dict(input_ids=input_ids, attention_mask=attention_mask)
    return dict(kwargs, labels=input_ids.clone()) if labels else kwargs


def _image(labels=True, size=IMAGE):
    kwargs = dict(pixel_values=torch.randn(BATCH, 3, size, size))
    return dict(kwargs, labels=torch.randint(0, 10, (BATCH,))) if labels else kwargs


def _model_loss(out):
    """The loss the model computed itself from ``labels``."""
    return out.loss


def _mean_square(field=None):
    """A loss for models without labels: the mean square of one output."""
    def loss(out):
        tensor = out if field is None else getattr(out, field)
        return tensor.pow(2).mean()
    return loss


def _builder(make_model, make_inputs):
    """build(): seed, make the model in eval mode, seed again, make (args, kwargs)."""
    def build():
        torch.manual_seed(0)
        model = make_model().eval()
        torch.manual_seed(1)
        args, kwargs = make_inputs()
        return model, args, kwargs
    return build


def _hf(name, category, model_class, config_class, config, inputs=_tokens, loss=_model_loss, fast=False,
        calibrate=False):
    """A transformers model ``model_class(config_class(**config))`` called with ``inputs()`` as kwargs."""
    def make_model():
        import transformers

        model = getattr(transformers, model_class)(getattr(transformers, config_class)(**config))
        return _calibrate_batch_norm(model, inputs()) if calibrate else model

    return RealModel(name, "transformers", category, _builder(make_model, lambda: ((), inputs())), loss, fast)


def _calibrate_batch_norm(model, batch):
    """Give BatchNorm the running statistics a trained model would have.

    Random convolution weights shrink activations a little per layer; in eval mode BatchNorm's
    initial statistics (mean 0, variance 1) do not undo that, so a deep net's outputs end near 0
    (about 1e-26 for MobileNetV2). One train-mode pass with ``momentum=None`` (an exact average)
    sets each layer's statistics to those of ``batch`` (a dict of inputs, made for this).
    """
    norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    for norm in norms:
        norm.momentum, momentum = None, norm.momentum
    with torch.no_grad():
        model.train()(**{name: value for name, value in batch.items() if name != "labels"})
    for norm in norms:
        norm.momentum = momentum
    return model


# ---- transformers: decoder LMs (each with its own attention flavour) ----

_LLAMA_LIKE = dict(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=128, num_hidden_layers=2,
                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                   attention_dropout=0.0, use_cache=False)

_DECODERS = [
    _hf("gpt2", "decoder", "GPT2LMHeadModel", "GPT2Config",
        dict(vocab_size=VOCAB, n_embd=HIDDEN, n_layer=2, n_head=4, n_positions=64, resid_pdrop=0.0,
             embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=1, eos_token_id=2, use_cache=False), fast=True),
    _hf("llama", "decoder", "LlamaForCausalLM", "LlamaConfig", _LLAMA_LIKE),  # rotary, grouped-query
    _hf("mistral", "decoder", "MistralForCausalLM", "MistralConfig",
        dict(_LLAMA_LIKE, sliding_window=8)),  # a window shorter than the sequence
    _hf("qwen2", "decoder", "Qwen2ForCausalLM", "Qwen2Config", _LLAMA_LIKE),  # biased q/k/v
    _hf("gemma", "decoder", "GemmaForCausalLM", "GemmaConfig", dict(_LLAMA_LIKE, head_dim=16)),
    _hf("mixtral", "decoder", "MixtralForCausalLM", "MixtralConfig",  # mixture of experts
        dict(_LLAMA_LIKE, num_local_experts=4, num_experts_per_tok=2)),
    _hf("phi", "decoder", "PhiForCausalLM", "PhiConfig",  # partial rotary, parallel block
        dict(_LLAMA_LIKE, resid_pdrop=0.0, embd_pdrop=0.0)),
    _hf("gpt_neox", "decoder", "GPTNeoXForCausalLM", "GPTNeoXConfig",
        dict(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=128, num_hidden_layers=2,
             num_attention_heads=4, max_position_embeddings=64, attention_dropout=0.0,
             hidden_dropout=0.0, use_cache=False)),
    _hf("bloom", "decoder", "BloomForCausalLM", "BloomConfig",  # ALiBi position biases
        dict(vocab_size=VOCAB, hidden_size=HIDDEN, n_layer=2, n_head=4, attention_dropout=0.0,
             hidden_dropout=0.0, use_cache=False)),
    _hf("opt", "decoder", "OPTForCausalLM", "OPTConfig",  # learned positions from the mask
        dict(vocab_size=VOCAB, hidden_size=HIDDEN, ffn_dim=128, num_hidden_layers=2, num_attention_heads=4,
             word_embed_proj_dim=HIDDEN, max_position_embeddings=64, dropout=0.0, attention_dropout=0.0,
             activation_dropout=0.0, use_cache=False)),
    _hf("falcon", "decoder", "FalconForCausalLM", "FalconConfig",  # multi-query attention
        dict(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=2, num_attention_heads=4,
             attention_dropout=0.0, hidden_dropout=0.0, use_cache=False)),
    _hf("gptj", "decoder", "GPTJForCausalLM", "GPTJConfig",
        dict(vocab_size=VOCAB, n_embd=HIDDEN, n_layer=2, n_head=4, rotary_dim=8, n_positions=64,
             resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=1, eos_token_id=2, use_cache=False)),
    _hf("mamba", "decoder", "MambaForCausalLM", "MambaConfig",  # a selective state-space scan, no attention
        dict(vocab_size=VOCAB, hidden_size=HIDDEN, state_size=8, num_hidden_layers=2, expand=2, conv_kernel=4,
             use_cache=False)),
]

# ---- transformers: encoders (masked LM heads) ----

_BERT_LIKE = dict(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=2, num_attention_heads=4,
                  intermediate_size=128, max_position_embeddings=64, hidden_dropout_prob=0.0,
                  attention_probs_dropout_prob=0.0)

_ENCODERS = [
    _hf("bert", "encoder", "BertForMaskedLM", "BertConfig", _BERT_LIKE, fast=True),
    _hf("roberta", "encoder", "RobertaForMaskedLM", "RobertaConfig", dict(_BERT_LIKE, pad_token_id=1)),
    _hf("distilbert", "encoder", "DistilBertForMaskedLM", "DistilBertConfig",
        dict(vocab_size=VOCAB, dim=HIDDEN, n_layers=2, n_heads=4, hidden_dim=128, max_position_embeddings=64,
             dropout=0.0, attention_dropout=0.0)),
    _hf("albert", "encoder", "AlbertForMaskedLM", "AlbertConfig",  # one layer's weights shared
        dict(_BERT_LIKE, embedding_size=32, classifier_dropout_prob=0.0)),
    _hf("electra", "encoder", "ElectraForMaskedLM", "ElectraConfig", dict(_BERT_LIKE, embedding_size=32)),
    _hf("deberta_v2", "encoder", "DebertaV2ForMaskedLM", "DebertaV2Config",  # disentangled attention
        dict(_BERT_LIKE, relative_attention=True, position_buckets=8, pos_att_type=["p2c", "c2p"])),
]

# ---- transformers: encoder-decoders ----

_SEQ2SEQ = [
    _hf("t5", "seq2seq", "T5ForConditionalGeneration", "T5Config",  # relative position buckets
        dict(vocab_size=VOCAB, d_model=HIDDEN, d_kv=16, d_ff=128, num_layers=2, num_heads=4,
             dropout_rate=0.0, decoder_start_token_id=0, pad_token_id=0, use_cache=False)),
    _hf("bart", "seq2seq", "BartForConditionalGeneration", "BartConfig",
        dict(vocab_size=VOCAB, d_model=HIDDEN, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
             decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, max_position_embeddings=64,
             dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, use_cache=False), fast=True),
    _hf("m2m_100", "seq2seq", "M2M100ForConditionalGeneration", "M2M100Config",  # deep-copies its config
        dict(vocab_size=VOCAB, d_model=HIDDEN, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
             decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, max_position_embeddings=64,
             dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, encoder_layerdrop=0.0,
             decoder_layerdrop=0.0, decoder_start_token_id=2, pad_token_id=1)),
]

# ---- transformers: vision (image classification, 10 labels) ----

_VISION = [
    _hf("vit", "vision", "ViTForImageClassification", "ViTConfig",
        dict(image_size=IMAGE, patch_size=8, hidden_size=HIDDEN, num_hidden_layers=2, num_attention_heads=4,
             intermediate_size=128, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, num_labels=10),
        inputs=_image, fast=True),
    _hf("swin", "vision", "SwinForImageClassification", "SwinConfig",  # shifted windows
        dict(image_size=IMAGE, patch_size=4, embed_dim=16, depths=[1, 1], num_heads=[2, 4], window_size=4,
             hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, drop_path_rate=0.0, num_labels=10),
        inputs=_image),
    _hf("convnext", "vision", "ConvNextForImageClassification", "ConvNextConfig",
        dict(image_size=IMAGE, num_stages=2, hidden_sizes=[16, 32], depths=[1, 1], drop_path_rate=0.0,
             num_labels=10),
        inputs=_image),
    _hf("resnet", "vision", "ResNetForImageClassification", "ResNetConfig",  # batch norm
        dict(embedding_size=16, hidden_sizes=[16, 32], depths=[1, 1], layer_type="basic", num_labels=10),
        inputs=_image, fast=True),
    _hf("mobilenet_v2", "vision", "MobileNetV2ForImageClassification", "MobileNetV2Config",
        dict(image_size=64, depth_multiplier=0.25, classifier_dropout_prob=0.0, num_labels=10),
        inputs=lambda: _image(size=64), calibrate=True),  # 64 px: BatchNorm over 2x2 maps, not 1x1
]

# ---- transformers: audio and multimodal ----


def _speech():
    return dict(input_values=torch.randn(BATCH, 800), labels=torch.randint(1, 32, (BATCH, 4)))


def _log_mel():
    return dict(input_features=torch.randn(BATCH, 16, 64), labels=torch.randint(3, VOCAB, (BATCH, SEQ)))


def _text_and_image():
    return dict(_tokens(labels=False), **_image(labels=False), return_loss=True)


_AUDIO_AND_MULTIMODAL = [
    _hf("wav2vec2", "audio", "Wav2Vec2ForCTC", "Wav2Vec2Config",  # conv feature extractor, CTC loss
        dict(vocab_size=32, hidden_size=HIDDEN, num_hidden_layers=2, num_attention_heads=4,
             intermediate_size=128, conv_dim=(16, 16), conv_stride=(5, 2), conv_kernel=(10, 3),
             num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4, hidden_dropout=0.0,
             activation_dropout=0.0, attention_dropout=0.0, feat_proj_dropout=0.0, final_dropout=0.0,
             layerdrop=0.0, mask_time_prob=0.0, mask_feature_prob=0.0, ctc_loss_reduction="mean"),
        inputs=_speech),
    _hf("whisper", "audio", "WhisperForConditionalGeneration", "WhisperConfig",
        dict(vocab_size=VOCAB, num_mel_bins=16, d_model=HIDDEN, encoder_layers=2, decoder_layers=2,
             encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128,
             max_source_positions=32, max_target_positions=64, dropout=0.0, attention_dropout=0.0,
             activation_dropout=0.0, pad_token_id=0, bos_token_id=1, eos_token_id=2,
             decoder_start_token_id=1, use_cache=False),
        inputs=_log_mel),
    _hf("clip", "multimodal", "CLIPModel", "CLIPConfig",  # contrastive text + vision towers
        dict(text_config=dict(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=128, num_hidden_layers=2,
                              num_attention_heads=4, max_position_embeddings=64, attention_dropout=0.0,
                              bos_token_id=1, eos_token_id=2),
             vision_config=dict(image_size=IMAGE, patch_size=8, hidden_size=HIDDEN, intermediate_size=128,
                                num_hidden_layers=2, num_attention_heads=4, attention_dropout=0.0),
             projection_dim=32),
        inputs=_text_and_image),
]

# ---- diffusers ----


def _diffusers(name, model_class, config, inputs):
    def make_model():
        import diffusers

        return getattr(diffusers, model_class)(**config)

    return RealModel(name, "diffusers", "diffusion", _builder(make_model, lambda: ((), inputs())),
                     _mean_square("sample"))


def _noisy_latents():
    return dict(sample=torch.randn(BATCH, 4, IMAGE, IMAGE), timestep=torch.tensor([10, 500]),
                encoder_hidden_states=torch.randn(BATCH, 8, 32))


def _noisy_image():
    return dict(sample=torch.randn(BATCH, 3, IMAGE, IMAGE), timestep=torch.tensor([10, 500]))


_DIFFUSION = [
    _diffusers("unet2d", "UNet2DModel",
               dict(sample_size=IMAGE, in_channels=3, out_channels=3, block_out_channels=(16, 32),
                    layers_per_block=1, norm_num_groups=8, attention_head_dim=8,
                    down_block_types=("DownBlock2D", "AttnDownBlock2D"),
                    up_block_types=("AttnUpBlock2D", "UpBlock2D")),
               _noisy_image),
    _diffusers("unet2d_condition", "UNet2DConditionModel",  # Stable Diffusion's UNet, cross-attention
               dict(sample_size=IMAGE, in_channels=4, out_channels=4, block_out_channels=(16, 32),
                    layers_per_block=1, norm_num_groups=8, cross_attention_dim=32, attention_head_dim=8,
                    down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
                    up_block_types=("CrossAttnUpBlock2D", "UpBlock2D")),
               _noisy_latents),
    _diffusers("autoencoder_kl", "AutoencoderKL",  # Stable Diffusion's VAE
               dict(in_channels=3, out_channels=3, block_out_channels=(16, 32), layers_per_block=1,
                    norm_num_groups=8, latent_channels=4, sample_size=IMAGE,
                    down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
                    up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D")),
               lambda: dict(sample=torch.randn(BATCH, 3, IMAGE, IMAGE))),
]

# ---- torch_geometric: graph neural networks on one random graph ----

NODES, EDGES, FEATURES = 20, 60, 16


def _random_graph():
    """Node features x [NODES, FEATURES] and a random directed edge_index [2, EDGES] without self loops."""
    src = torch.randint(0, NODES, (EDGES,))
    dst = (src + torch.randint(1, NODES, (EDGES,))) % NODES
    return (torch.randn(NODES, FEATURES), torch.stack([src, dst])), {}


def _pyg(name, model_class, fast=False, **config):
    def make_model():
        import torch_geometric.nn.models as models

        return getattr(models, model_class)(in_channels=FEATURES, hidden_channels=32, num_layers=2,
                                            out_channels=4, dropout=0.0, **config)

    return RealModel(name, "torch_geometric", "gnn", _builder(make_model, _random_graph), _mean_square(), fast)


_GNN = [
    _pyg("gcn", "GCN", fast=True),
    _pyg("gat", "GAT", heads=2),
    _pyg("graphsage", "GraphSAGE"),
]

REAL_MODELS = {m.name: m for m in _DECODERS + _ENCODERS + _SEQ2SEQ + _VISION + _AUDIO_AND_MULTIMODAL
               + _DIFFUSION + _GNN}
