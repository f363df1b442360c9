#!/usr/bin/env python3
"""coalesce_shutdown_clients.py PORT GATE_LOG READY OUT SHA256 LENGTH: the
clients of t_coalesce_shutdown. The leader and every follower that lands
on the leader's worker never read (their connections are dropped at
limits.send_timeout, leaving that worker with none); followers on the
other worker read the whole answer. Which worker a request is on comes
from the gate's debug log ("leads|joined /config/worker on worker
W"), read after each request is sent, one at a time. Writes READY (JSON:
the leader's worker, how many stall, how many read) once the clients are
placed, then OUT (JSON: one result per reader) once they are done.
Bounded: 16 followers, 60 s."""
import hashlib, json, re, selectors, socket, sys, time

port, log, ready, out, want_sha, want_len = sys.argv[1:7]
port, want_len = int(port), int(want_len)
REQ = b"GET /config/worker HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: Ignition/2.14.0\r\n\r\n"
ATTACH = re.compile(r'"msg":"(leads|joined) /config/worker on worker (\d+)"')
deadline = time.monotonic() + 60

def attached():
    return [m.groups() for m in ATTACH.finditer(open(log).read())]

def ask():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)   # a stalled one fills at once
    s.connect(("127.0.0.1", port))
    s.sendall(REQ)
    return s

def wait_attached(n):
    while time.monotonic() < deadline:
        a = attached()
        if len(a) >= n:
            return a
        time.sleep(0.01)
    sys.exit("only %d of %d requests attached" % (len(attached()), n))

stalled, readers = [ask()], []
how, leader_worker = wait_attached(1)[0]
assert how == "leads", how
for i in range(16):
    s = ask()
    how, worker = wait_attached(i + 2)[i + 1]
    assert how == "joined", how
    (stalled if worker == leader_worker else readers).append(s)
    if len(readers) == 2:
        break
if not readers:
    sys.exit("all 17 requests landed on worker %s" % leader_worker)
json.dump({"leader_worker": int(leader_worker), "stalled": len(stalled), "readers": len(readers)}, open(ready + ".tmp", "w"))
import os
os.rename(ready + ".tmp", ready)

sel = selectors.DefaultSelector()
state = {}
for s in readers:
    s.setblocking(False)
    state[s] = bytearray()
    sel.register(s, selectors.EVENT_READ)
results = []
while state and time.monotonic() < deadline:
    for key, _ in sel.select(timeout=1):
        s = key.fileobj
        chunk = s.recv(1 << 20)
        buf = state[s]
        buf += chunk
        head_end = buf.find(b"\r\n\r\n")
        done = not chunk
        if head_end >= 0:
            m = re.search(rb"\r\ncontent-length: *(\d+)", bytes(buf[:head_end]), re.I)
            if m and len(buf) - head_end - 4 >= int(m.group(1)):
                done = True
        if done:
            sel.unregister(s)
            body = bytes(buf[head_end + 4:]) if head_end >= 0 else b""
            status = int(buf[9:12]) if buf.startswith(b"HTTP/1.1 ") else 0
            results.append({"status": status, "bytes": len(body), "complete": len(body) == want_len,
                            "sha256_ok": hashlib.sha256(body).hexdigest() == want_sha, "eof": not chunk})
            del state[s]
for s in state:
    results.append({"status": 0, "bytes": len(state[s]), "complete": False, "sha256_ok": False, "eof": False})
json.dump(results, open(out, "w"))
for s in stalled:
    s.close()
