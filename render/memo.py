"""What every command works out again from the same files, kept between processes: a source file's imports (the cue
check and the beat keys walk 500 of them), a template's compiled code, and a result computed by the project's code
from its inputs alone (render/code.py's computed: the extended cut's simulations, the page's Under load grid). An
entry is named by a digest of everything it was made from (the file's or the template's bytes, the tool's and
Python's versions), holds a digest of its own bytes, and is checked against it before use: a damaged or half-written
entry is made again, and a change to anything it was made from names another entry. Kept in the project's
build/cache/memo/; where that cannot be written the result is simply not kept.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable
from pathlib import Path

from render.files import memo_dir, write_atomic

MEMO_DIR = memo_dir()
FORMAT = 1
_SEEN: dict[tuple[str, str], bytes] = {}  # (kind, key) -> payload, for this process


def key_of(*parts: bytes | str) -> str:
    """A digest of everything an entry is made from (with the memo's format and Python's version)."""
    digest = hashlib.sha256(f"{FORMAT}\0{sys.version}".encode())
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "little") + data)
    return digest.hexdigest()[:40]


def remembered(kind: str, key: str, make: Callable[[], bytes], folder: Path | None = None) -> bytes:
    """The bytes `make()` gives for `key`, from the memo when it holds them intact, else made and kept."""
    found = _SEEN.get((kind, key))
    if found is not None:
        return found
    path = (folder or MEMO_DIR) / kind / f"{key}.bin"
    try:
        data = path.read_bytes()
    except OSError:
        data = b""
    payload = data[32:]
    if len(data) < 32 or hashlib.sha256(payload).digest() != data[:32]:
        payload = make()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, hashlib.sha256(payload).digest() + payload)
        except OSError:
            pass  # (a read-only or full build folder: the result is used, not kept)
    _SEEN[(kind, key)] = payload
    return payload
