"""Saving and loading the entity graph (node-link JSON)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import networkx as nx
from networkx.readwrite import json_graph

if TYPE_CHECKING:
    pass


def save_graph(g: nx.DiGraph, path: Path) -> None:
    """Write the graph (nodes, edges and graph attributes) as node-link JSON."""
    Path(path).write_text(json.dumps(json_graph.node_link_data(g, edges="edges"), indent=1))


def load_graph(path: Path) -> nx.DiGraph:
    """Read a graph written by :func:`save_graph`."""
    return json_graph.node_link_graph(json.loads(Path(path).read_text()), directed=True, edges="edges")
