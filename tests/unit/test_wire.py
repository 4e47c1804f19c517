"""The engine server's wire writes what json.dumps writes and reads what json.loads reads, without them."""

from __future__ import annotations

import json
import math
import socket
import threading

import pytest

from nfvcat.validation import wire

VALUES = [
    {},
    [],
    "",
    {"op": "run", "cwd": "/tmp/d ir", "argv": ["validate", "-e", "é.yaml", "--format", "json"],
     "caller": {"python": "/usr/bin/python3", "settings": {"NFVCAT_SITE": "lab"}}},
    {"stdout": "line 1\nline\t2 \"quoted\" \\ back\u2028 \U0001f600 \x00\x1f\x7f", "stderr": "", "code": 0},
    {"nested": [[{"a": [1, -2, 3.5, 1e300, -0.0, 2 ** 70]}], (1, "two"), None, True, False]},
    {1: "int key", 2.5: "float key", False: "bool key", None: "null key"},
    ["\ud800 lone surrogate", "日本語", "\u0000"],
]


@pytest.mark.parametrize("value", VALUES)
def test_written_as_json_dumps_writes_it_and_read_back(value: object) -> None:
    text = wire.dumps(value)
    assert text == json.dumps(value)
    assert wire.loads(text) == json.loads(text)
    assert wire.loads(f" \n{text}\t\r\n") == json.loads(text)


def test_numbers_that_json_writes_as_words() -> None:
    value = [math.inf, -math.inf, math.nan]
    assert wire.dumps(value) == json.dumps(value) == "[Infinity, -Infinity, NaN]"
    read = wire.loads("[Infinity, -Infinity, NaN, 1E3, -0, 12345678901234567890]")
    assert read[:2] == [math.inf, -math.inf] and math.isnan(read[2]) and read[3:] == [1000.0, 0, 12345678901234567890]


@pytest.mark.parametrize("text", ["", "  ", "{", '{"a": 1} x', '{"a": 1}{}', "[1,]", "{'a': 1}", '"\\x"', "nul",
                                  '{"a": "\n"}'])
def test_what_json_does_not_read_is_a_value_error(text: str) -> None:
    with pytest.raises(ValueError):
        json.loads(text)
    with pytest.raises(ValueError):
        wire.loads(text)


def test_what_json_cannot_write_is_refused_as_json_refuses_it() -> None:
    for value in ({"a": {1, 2}}, {"a": b"bytes"}, {(1, 2): "tuple key"}, [object()]):
        with pytest.raises(TypeError):
            json.dumps(value)
        with pytest.raises(TypeError):
            wire.dumps(value)
    cycle: list[object] = []
    cycle.append(cycle)
    with pytest.raises(ValueError):
        wire.dumps(cycle)
    shared = [1]
    assert wire.dumps([shared, shared]) == "[[1], [1]]"


def test_a_line_each_way_over_a_socket_pair() -> None:
    """send and receive as the server (socket.socket) and the client (_socket.socket) use them."""
    left, right = socket.socketpair(socket.AF_UNIX)
    with left, right:
        message = {"op": "run", "argv": ["validate", "ü"], "big": "x" * (3 << 20)}  # more than one recv
        sender = threading.Thread(target=wire.send, args=(left, message))
        sender.start()
        assert wire.receive(right, 10) == message
        sender.join()
        right.sendall(b'{"not": "a line"')
        right.shutdown(socket.SHUT_WR)
        assert wire.receive(left, 10) is None  # closed before the end of the line
    a, b = socket.socketpair(socket.AF_UNIX)
    with a, b:
        b.sendall(b"[1, 2]\n")
        assert wire.receive(a, 10) is None  # not an object
        b.sendall(b"\xff\n")
        assert wire.receive(a, 10) is None  # not UTF-8
        assert wire.receive(a, 0.2) is None  # nothing comes
