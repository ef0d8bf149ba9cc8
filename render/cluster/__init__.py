"""Many films at once on a Dask cluster: the client (films.py), the worker's task (tasks.py) and
which films a matrix holds (variants.py)."""
