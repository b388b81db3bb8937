"""gpusort as the engine of Dask's sorts and selections (python3-dask, python3-distributed).

    from dask.distributed import Client
    import gpusort.dask as gd

    servers = gd.Servers(["gpu-node-1:50051", "gpu-node-2:50051"])   # or one Service name
    values, indices = gd.topk(darr, 100, servers)        # 1-D, or per row of a 2-D array
    ordered = gd.sort(darr, servers)                     # numpy.sort(kind="stable"), chunked
    positions = gd.argsort(darr, servers)
    frame = gd.sort_values(ddf, "price", ascending=False, servers=servers)
    top = gd.nlargest(ddf, 10, "price", servers)

Each worker calls one server, chosen once (one on its own host first, with its shared memory where
Servers names the socket); a task whose server is gone fails with gpusort's error and Dask retries it on
another server. Results equal numpy's and pandas' (stable) bit for bit, as the Python client does.
"""
from ._arrays import argsort, sort, topk
from ._frames import nlargest, nsmallest, sort_values
from ._servers import Servers

__all__ = ["Servers", "topk", "sort", "argsort", "sort_values", "nlargest", "nsmallest"]
