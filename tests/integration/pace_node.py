"""One Ignition-like config fetch of a paced node, shared by pace_ask.py,
pace_nodes.py and pace_cluster.py (imported from beside them)."""
import re
import socket


def fetch(source, port, timeout=10):
    """GET /config/worker on 127.0.0.1:PORT from the address SOURCE (a node
    is its address), read to the close: (status, Skewgate-Reason or "")."""
    s = socket.socket()
    try:
        s.bind((source, 0))
        s.settimeout(timeout)
        s.connect(("127.0.0.1", port))
        s.sendall(b"GET /config/worker HTTP/1.1\r\nHost: x\r\nUser-Agent: pace-node\r\nConnection: close\r\n\r\n")
        got = b""
        while True:
            c = s.recv(65536)
            if not c:
                break
            got += c
    finally:
        s.close()
    reason = re.search(rb"\r\nSkewgate-Reason: *([A-Za-z]+)", got)
    return int(got.split(b" ", 2)[1]), reason.group(1).decode() if reason else ""
