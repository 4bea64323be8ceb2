"""The perception memory of a video and the typed queries over it (issue 53: the model parses, the host answers).

What the index's tools measured (boxes with tracks and person subjects, people readings, OCR lines, the transcript,
shots, per-frame brightness and colour, flat shapes) is kept in one SQLite file per index (:mod:`avi.memory.store`,
``memory.sqlite``). The orchestrator only translates a question into a :class:`~avi.memory.query.MemoryQuery` (a
JSON object of enumerated fields, decoded under its JSON schema: :mod:`avi.memory.parse`); plain code evaluates it
(:mod:`avi.memory.evaluate`) and returns the answer with the rows it rests on. Where the memory cannot answer, the
Retrieve-Perceive-Review agent runs and gets the query's result as an observation (:mod:`avi.agent.memory_route`).

The shape follows VideoAgent (Fan et al., ECCV 2024, arXiv 2403.11481: an object memory in SQL queried through
tools), with MoReVQA's separation of parsing, grounding in time and reasoning (Min et al., CVPR 2024), and few-shot
examples retrieved by question similarity (CodeVQA, Subramanian et al., ACL 2023).
"""
