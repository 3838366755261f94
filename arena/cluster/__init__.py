"""quarto_arena.arena.cluster: games played on the workers of a Dask distributed cluster (the ``dask`` extra).

- :mod:`.task`: what a worker runs; a pure description of a game in (engines as config dicts, the game's fields),
  its record as a dict out; the engine check before the first game and the compliance check;
- :mod:`.warm`: the engines a worker keeps warm between games (one pool per worker process, released with the
  coordinator's lease);
- :mod:`.connection`: the ``--cluster`` address, the connection (or a local cluster), the workers' threads and
  cores (:class:`Cluster`, :class:`ClusterError`);
- :mod:`.player`: :class:`ClusterPlayer`, the runner's game player that submits one task per game, and
  :func:`play_on_cluster`.

Dask is imported only when a cluster is used (by :mod:`.connection` and :mod:`.player`, and by :mod:`.task`'s
functions on a worker): without the extra this package imports, and ``--cluster`` says which extra to install.
"""

from .connection import CONNECT_TIMEOUT, Cluster, ClusterAddress, ClusterError, WorkerFacts, WorkerReport
from .player import ClusterPlayer, play_on_cluster

__all__ = [
    "CONNECT_TIMEOUT",
    "Cluster",
    "ClusterAddress",
    "ClusterError",
    "ClusterPlayer",
    "WorkerFacts",
    "WorkerReport",
    "play_on_cluster",
]
