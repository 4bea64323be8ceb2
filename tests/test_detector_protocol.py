"""Every detector in avi/backends declares what the :class:`avi.backends.detector.Detector` protocol declares, its
optional capabilities included (``class_list``, ``detect_all``, ``detect_batch``: None where it lacks one; issue 54).
Read from the classes and their ``__init__`` source: no weights are loaded."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import avi.backends
from avi.backends.detector import Detector
from avi.backends.frame_reuse import ReusingDetector

#: the detectors there are today: the search below must find at least these
KNOWN = {"OpenCvDetector", "CpuDetector", "NanoDetDetector", "ShapeDetector", "GroundingDinoDetector",
         "GroundingDinoOriginalDetector", "ReusingDetector"}
CAPABILITIES = ("class_list", "detect_all", "detect_batch")


def _members() -> set[str]:
    """The protocol's attributes and methods."""
    return set(Detector.__annotations__) | {k for k, v in vars(Detector).items()
                                            if callable(v) and not k.startswith("_")}


def _detector_classes() -> dict[str, type]:
    """Classes of avi/backends whose ``detect`` takes labels (``detect(self, frame, labels)``) and that have
    ``supports``: the Detector protocol's implementations (the people models' ``detect(image)`` are not)."""
    found = {}
    for mod in pkgutil.walk_packages(avi.backends.__path__, "avi.backends."):
        spec = importlib.util.find_spec(mod.name)
        if spec is None or not spec.origin or not spec.origin.endswith(".py"):
            continue
        if "def detect(self, frame" not in Path(spec.origin).read_text():
            continue
        module = importlib.import_module(mod.name)
        for name, cls in vars(module).items():
            if inspect.isclass(cls) and cls is not Detector and cls.__module__ == module.__name__ \
                    and callable(getattr(cls, "supports", None)) and _takes_labels(getattr(cls, "detect", None)):
                found[name] = cls
    return found


def _takes_labels(detect) -> bool:
    return callable(detect) and list(inspect.signature(detect).parameters)[1:3] == ["frame", "labels"]


def _set_in_init(cls: type, name: str) -> bool:
    return re.search(rf"\bself\.{name}\s*(:[^=]+)?=", inspect.getsource(cls.__init__)) is not None


def test_every_detector_declares_the_protocols_members():
    classes = _detector_classes()
    assert KNOWN <= set(classes), f"not found: {KNOWN - set(classes)}"
    assert set(CAPABILITIES) <= _members()
    missing = [f"{name}.{m}" for name, cls in classes.items() for m in sorted(_members())
               if not hasattr(cls, m) and not _set_in_init(cls, m)]
    assert not missing, f"declare these (None where the detector lacks the capability): {missing}"
    for name, cls in classes.items():
        for m in CAPABILITIES:
            value = inspect.getattr_static(cls, m, None)
            assert value is None or callable(value) or _set_in_init(cls, m) or isinstance(value, (tuple, list)), \
                f"{name}.{m}"


def test_the_reusing_wrapper_declares_what_the_wrapped_detector_declares():
    from avi.backends.detector import CpuDetector, OpenCvDetector
    from avi.backends.shapes import ShapeDetector

    plain = ReusingDetector(OpenCvDetector())
    assert (plain.class_list, plain.detect_all, plain.detect_batch) == (None, None, None)
    shapes = ReusingDetector(ShapeDetector())
    assert isinstance(shapes, Detector) and shapes.detect_all is None

    class _Coco:  # stands in for NanoDet-m inside the cpu detector (no weights)
        name = "coco-double"

        def supports(self, label):
            return label == "car"

    cpu = ReusingDetector(CpuDetector(_Coco(), OpenCvDetector()))
    assert "face" in cpu.class_list and callable(cpu.detect_all) and cpu.detect_batch is None
