#!/usr/bin/env python3
# Copyright 2026 The safe-launch Authors. SPDX-License-Identifier: Apache-2.0
"""Ports for the integration tests' rendezvous: P with P and P + 1 free (safe-launch's warm-up
store listens on the rendezvous port + 1), taken below the kernel's ephemeral range, so that no
other test's outgoing connection can be handed either between our check and the daemon's bind
(seen in CI: "The server socket has failed to listen on any local network address").

usage: ports.py          prints P
       from ports import free_port_pair
"""
import random
import socket


def ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _free(port):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def free_port_pair():
    top = max(ephemeral_low() - 2, 12000)
    for port in random.sample(range(10000, top), min(2000, top - 10000)):
        if _free(port) and _free(port + 1):
            return port
    raise RuntimeError(f"no free port pair between 10000 and {top}")


if __name__ == "__main__":
    print(free_port_pair())
