"""After the film: what a publisher needs beside it (kit.py) and the page to review it (review.py)."""
