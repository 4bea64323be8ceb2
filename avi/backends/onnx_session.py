"""An onnxruntime CPU session checked against the graph's expected input: the cpu profile's ONNX models (the
COCO detector, the people models) open through it."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence


def open_session(onnx_path: Path | str, what: str, shape: Sequence[int | None], threads: int = 1):
    """An onnxruntime CPU session of ``onnx_path`` whose single input has ``shape`` (None: any size).

    Args:
        onnx_path: the verified ONNX file.
        what: the model's name for error messages (e.g. ``"BlazeFace 256"``).
        shape: expected input shape; ``None`` where the graph's dimension is symbolic or anything goes.
        threads: intra-op threads (one measured faster than two on the 2 shared cores, research/npm_detector.md).

    Returns:
        ``(session, input name, output names)``.

    Raises:
        AviError: onnxruntime is missing, the file does not load, or its input is not ``shape``.
    """
    from avi.errors import AviError

    try:
        import onnxruntime as ort
    except ImportError as exc:  # pragma: no cover - part of avi[cpu]
        raise AviError("onnxruntime is not installed: pip install 'avi[cpu]'") from exc
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = max(1, int(threads))
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    try:
        session = ort.InferenceSession(str(onnx_path), sess_options=opts, providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own exception types
        raise AviError(f"{onnx_path} does not load as an ONNX model: {str(exc).splitlines()[0]}") from None
    inputs = session.get_inputs()
    got = list(inputs[0].shape) if len(inputs) == 1 else None
    if got is None or len(got) != len(shape) or any(
            want is not None and g != want for g, want in zip(got, shape)):
        raise AviError(f"{onnx_path} is not a {what} graph (inputs {[list(i.shape) for i in inputs]}, expected "
                       f"one of shape {list(shape)})")
    return session, inputs[0].name, [o.name for o in session.get_outputs()]
