"""A locked sentence-transformers model exported to ONNX (``kind = "onnx-export"`` in weights.lock).

The cpu profile's embedder (all-MiniLM-L6-v2) runs in every ``avi-run`` for the host's opening search; loading it
through sentence-transformers costs about 5 s of imports (torch, transformers, scikit-learn) on a 2-core machine,
which is most of a question's start-up (issue 38). The same weights exported to ONNX load with onnxruntime and
``tokenizers`` in about 0.4 s (:class:`avi.backends.embedder.OnnxEmbedder`).

The export is derived from a locked entry, never downloaded:

1. the source entry (``from`` in ``[weight.source]``) is verified against weights.lock;
2. its transformer (``transformers.AutoModel``, eager attention) is traced by ``torch.onnx.export`` (TorchScript
   exporter, pinned ``opset``) to a graph with inputs ``input_ids``, ``attention_mask``, ``token_type_ids``
   (int64, batch x tokens) and output ``last_hidden_state`` (float32, batch x tokens x hidden);
3. the file's sha256 is compared with weights.lock, and only then moved into place.

The pinned bytes are those whose vectors were checked against sentence-transformers' own (within 1e-5, on texts
past the 256-token truncation, empty, non-Latin; tests/test_embedder_onnx.py repeats the check on a fresh export
in every test run). An entry without a sha256 is placed unchecked: the test setup's way to export on any version.

The bytes depend on the torch and transformers versions (scripts/setup.sh pins torch); on another version the
sha256 differs and the fetch fails with that reason. Entries of this kind are ``optional``: without the export the
embedder loads through sentence-transformers (the same vectors, a slower start).
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

from avi.errors import WeightsError
from avi.hashing import sha256_file
from avi.weights.lock import missing_module


def export_onnx(entry, models_dir: Path, lock_path: Path) -> Path:
    """Export ``entry``'s source model to ONNX at ``entry.local_path(models_dir)``; returns that path.

    Args:
        entry: a weights.lock entry of kind ``onnx-export`` (``source``: ``from``, ``opset``).
        models_dir: the models directory.
        lock_path: weights.lock (the source entry is looked up and verified there).

    Raises:
        WeightsError: unknown or unverified source entry, onnx, torch or transformers missing, or the export's
            sha256 differs from weights.lock (not compared when the entry has no sha256).
    """
    from avi.weights.checks import resolve

    src_name = str(entry.source.get("from", ""))
    model_dir = resolve(src_name, models_dir, lock_path)  # raises when missing or not matching the lock
    try:
        import onnx  # torch.onnx.export writes the file through it (torch says only "Module onnx is not installed!")
        import torch
        from transformers import AutoModel
        from transformers.utils import logging as hf_logging
    except ImportError as exc:
        raise missing_module(entry, exc, "exporting") from None
    hf_logging.disable_progress_bar()  # no "Loading weights" bar in setup's output
    target = entry.local_path(models_dir)
    partial = target.with_name(target.name + ".partial")
    partial.parent.mkdir(parents=True, exist_ok=True)

    class _HiddenStates(torch.nn.Module):  # keyword inputs: BertModel.forward's positional order changes
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.model(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state

    model = AutoModel.from_pretrained(str(model_dir), local_files_only=True, attn_implementation="eager").eval()
    dummy = (torch.ones(1, 8, dtype=torch.long), torch.ones(1, 8, dtype=torch.long),
             torch.zeros(1, 8, dtype=torch.long))
    names = ["input_ids", "attention_mask", "token_type_ids"]
    dynamic = {n: {0: "batch", 1: "tokens"} for n in names + ["last_hidden_state"]}
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(_HiddenStates(model), dummy, str(partial), input_names=names,
                              output_names=["last_hidden_state"], dynamic_axes=dynamic,
                              opset_version=int(entry.source.get("opset", 17)), dynamo=False)
        onnx.checker.check_model(str(partial))  # a well-formed graph before its hash is compared
        digest = sha256_file(partial)
        if entry.sha256 and digest != entry.sha256:  # an unpinned entry (sha256 = "") is placed as it came out
            raise WeightsError(f"weights '{entry.name}': the export has sha256 {digest[:12]}…, weights.lock says "
                               f"{entry.sha256[:12]}… (torch {torch.__version__}; another torch or transformers "
                               f"version traces other bytes)")
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    os.replace(partial, target)
    return target
