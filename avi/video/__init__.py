"""Video decoding (PyAV), sampling at a fixed rate, clip segmentation."""

from avi.video.clips import Clip, segment
from avi.video.decode import Frame, VideoInfo, VideoReader, file_sha256, probe, sample_frames

__all__ = ["Clip", "Frame", "VideoInfo", "VideoReader", "file_sha256", "probe", "sample_frames", "segment"]
