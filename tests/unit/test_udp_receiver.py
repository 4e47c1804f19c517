"""The one UDP receiver of the labs (nfvcat_testbeds.lab.sockets.UDP_RX: the DSCP check's TOS bytes and the
latency probes' one-way delays), run here on 127.0.0.1 (``ns`` None) with real datagrams."""

from __future__ import annotations

import socket
import struct
import time

import pytest

from nfvcat_testbeds.lab.sockets import udp_receiver


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_receiver_reports_each_datagrams_tos_byte() -> None:
    port = free_port()
    with udp_receiver(None, "127.0.0.1", port, 3, 10, "tos") as result, \
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as tx:
        for tos in (0xB8, 0x28, 0x00):  # EF, AF11, best effort
            tx.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos)
            tx.sendto(b"nfvcat-dscp-probe", ("127.0.0.1", port))
        assert result(30) == [0xB8, 0x28, 0x00]


def test_the_receiver_reports_each_probes_one_way_delay_once() -> None:
    port = free_port()
    with udp_receiver(None, "127.0.0.1", port, 3, 10, "latency") as result, \
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as tx:
        t0 = time.time_ns()
        for seq in (0, 1, 1, 2):  # a probe sent twice counts once
            tx.sendto(struct.pack("!QQ", seq, time.time_ns()) + b"\0\0", ("127.0.0.1", port))
        delays = result(30)
        elapsed = time.time_ns() - t0
    assert len(delays) == 3 and all(0 <= d <= elapsed for d in delays), (delays, elapsed)


def test_a_receiver_that_cannot_start_says_why() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        with pytest.raises(RuntimeError, match=r"(?s)TOS receiver did not start: .*Address already in use"), \
                udp_receiver(None, "127.0.0.1", port, 1, 5, "tos"):
            pass


def test_a_receiver_that_hears_nothing_gives_an_empty_list_by_its_deadline() -> None:
    with udp_receiver(None, "127.0.0.1", free_port(), 2, 0.5, "latency") as result:
        assert result(30) == []
