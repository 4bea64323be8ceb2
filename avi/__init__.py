"""avi: air-gapped agentic question answering over long videos.

The agent follows the Retrieve -> Perceive -> Review design of the AVI paper
(Agentic Video Intelligence, arXiv 2511.14446) over a per-video database of 5 s
clip captions (Chroma), an entity graph (networkx) and the raw video frames.
"""

__version__ = "0.1.0"
