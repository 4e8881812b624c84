"""Reading a watch stream: JSON values one after another (JSON lines, or kubectl's indented output),
from a file or a pipe, each located by the line it starts on.

A pipe is read without blocking past a timeout, so a caller can act when the stream pauses.
"""

from __future__ import annotations

import os
import select
from collections.abc import Iterator
from typing import IO, Any

import orjson

from apportion.errors import InputError, check_depth
from apportion.lean_dataclass import dataclass


@dataclass(frozen=True, slots=True)
class Value:
    """One decoded JSON value and the line it starts on."""

    line: int
    data: Any


@dataclass(frozen=True, slots=True)
class Pause:
    """No complete value arrived within the timeout."""


PAUSE = Pause()


class LineSource:
    """Lines from a binary file descriptor, with a timeout on waiting for the next one."""

    def __init__(self, fh: IO[bytes]) -> None:
        self.fd = fh.fileno()
        self.buf = b""
        self.eof = False

    def next_line(self, timeout: float | None) -> bytes | Pause | None:
        """The next line (with its newline, if any); PAUSE if none is complete after `timeout` seconds
        (None: wait as long as it takes); None at the end of the stream."""
        while True:
            nl = self.buf.find(b"\n")
            if nl >= 0:
                line, self.buf = self.buf[: nl + 1], self.buf[nl + 1:]
                return line
            if self.eof:
                if self.buf:
                    line, self.buf = self.buf, b""
                    return line
                return None
            if timeout is not None:
                ready, _, _ = select.select([self.fd], [], [], timeout)
                if not ready:
                    return PAUSE
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                self.eof = True
            else:
                self.buf += chunk


def _depth(text: bytes) -> int:
    """Open brackets minus closed ones outside strings (whether a value may still be incomplete)."""
    depth, in_str, esc = 0, False, False
    for c in text:
        if in_str:
            if esc:
                esc = False
            elif c == 0x5C:  # backslash
                esc = True
            elif c == 0x22:  # quote
                in_str = False
        elif c == 0x22:
            in_str = True
        elif c in (0x7B, 0x5B):
            depth += 1
        elif c in (0x7D, 0x5D):
            depth -= 1
    return depth


def values(source: LineSource, name: str, *, timeout: float | None = None) -> Iterator[Value | Pause | InputError]:
    """Each JSON value in the stream; PAUSE when the stream pauses for `timeout` seconds between values;
    an InputError (yielded, not raised, so a caller may skip it) for a malformed value, after which
    reading goes on at the next line."""
    lines: list[bytes] = []
    start = 0
    lineno = 0
    while True:
        got = source.next_line(timeout if not lines else None)
        if isinstance(got, Pause):
            yield PAUSE
            continue
        if got is None:
            if lines:
                yield InputError("unexpected end of stream inside a JSON value", where=f"{name}: line {start}")
            return
        lineno += 1
        stripped = got.strip()
        if lines and got[:1] in (b"{", b"["):
            # a value opening in column 0 starts a new top-level value: the one before never closed
            yield InputError("malformed JSON: value not closed before the next one starts",
                             where=f"{name}: line {start}")
            lines = []
        if not lines:
            if not stripped:
                continue
            start = lineno
        lines.append(got)
        if not stripped.endswith((b"}", b"]")):
            continue
        # try to decode when a line closes a value: a one-line value, or a closing bracket in column 0
        # (how indented JSON closes its top-level value)
        if len(lines) > 1 and got[:1] not in (b"}", b"]"):
            continue
        text = b"".join(lines)
        try:
            data = orjson.loads(text)
        except orjson.JSONDecodeError as e:
            if _depth(text) > 0:
                continue  # a value spread over more lines
            lines = []
            yield InputError(f"malformed JSON at column {e.colno}: {e.msg}", where=f"{name}: line {start + e.lineno - 1}")
            continue
        lines = []
        try:
            check_depth(data, f"{name}: line {start}")
        except InputError as e:
            yield e
            continue
        yield Value(start, data)
