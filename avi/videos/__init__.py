"""Questions over several videos at once (issue 21; AgentCVR, arXiv 2605.29643, §3-4).

One agent answers about a set of videos, each with its own index built or reused exactly as for one video:

* :mod:`avi.videos.naming`: the ``--video`` arguments (files, folders, globs) and the short name of each video;
* :mod:`avi.videos.context`: the tools' host context over several videos (one :class:`avi.tools.ToolContext`
  per video behind one shared frame budget);
* :mod:`avi.videos.tools`: every tool with an optional ``video`` argument (search tools search all indexes and
  rank together; tools on time ranges look at one named video);
* :mod:`avi.videos.kinds`: answer types over videos (a video name, a set of names, an order of videos);
* :mod:`avi.videos.pipeline`: prepare the videos, run :class:`avi.videos.agent.MultiAgent`, the trace.

With one video none of this is used: the single-video path, its prompts and its tool schemas are unchanged.
"""
