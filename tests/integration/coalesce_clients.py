#!/usr/bin/env python3
"""Concurrent clients for the coalescing tests: N GETs (or HEADs) at once,
each on its own connection to 127.0.0.1:PORT (TLS with --ca), all sent
before any is read. Each result is one JSON line in --out: status, body
length, whether the body is complete by its Content-Length, its sha256, and
how the read ended ("eof" before the length: a short read), and whether
the head said "Connection: close" (every request here asks for it).
--slow: one client with a 4 KiB receive buffer that reads nothing (after the
head) until --go-file exists, then reads on; it reports the bytes it had
read when the go file appeared (--slow-mark-file), proving it was
connected and behind meanwhile.
--trickle RATE: each client has a 64 KiB receive buffer and reads 16 KiB
at a time, RATE bytes a second at most: a reader that keeps taking bytes,
too slowly."""
import argparse, hashlib, json, os, socket, ssl, sys, threading, time

def connect(a):
    s = socket.socket()
    if a.slow:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    if a.trickle:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    s.settimeout(60)
    s.connect(("127.0.0.1", a.port))
    if a.ca:
        ctx = ssl.create_default_context(cafile=a.ca)
        s = ctx.wrap_socket(s, server_hostname="localhost")
    return s

def read_head(s, buf):
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(65536)
        if not chunk:
            return None, buf
        buf += chunk
    head, rest = buf.split(b"\r\n\r\n", 1)
    return head, rest

def one(a, i, results):
    r = {"i": i}
    try:
        s = connect(a)
        method = "HEAD" if a.head else "GET"
        s.sendall(("%s %s HTTP/1.1\r\nHost: x\r\nAccept: %s\r\nConnection: close\r\n\r\n"
                   % (method, a.path, a.accept)).encode())
        head, body = read_head(s, b"")
        if head is None:
            r["end"] = "eof-in-head"
            results[i] = r
            return
        lines = head.split(b"\r\n")
        r["status"] = int(lines[0].split()[1])
        length = None
        for l in lines[1:]:
            k, _, v = l.partition(b":")
            if k.strip().lower() == b"content-length":
                length = int(v.strip())
        r["length"] = length
        r["conn_close"] = any(l.lower().replace(b" ", b"") == b"connection:close" for l in lines[1:])
        if a.mark_dir:
            open(os.path.join(a.mark_dir, str(i)), "w").close()
        want = 0 if a.head else length
        h = hashlib.sha256()
        got = 0
        if a.slow:
            deadline = time.monotonic() + 60
            while not os.path.exists(a.go_file) and time.monotonic() < deadline:
                time.sleep(0.01)
            with open(a.slow_mark_file, "w") as f:
                f.write(str(len(body)))
        r["end"] = "complete"
        while True:
            if body:
                h.update(body)
                got += len(body)
            if want is not None and got >= want:
                break
            try:
                if a.trickle:
                    time.sleep(16384 / a.trickle)
                body = s.recv(16384 if a.trickle else 65536)
            except (ConnectionError, ssl.SSLError) as e:
                r["end"] = "error:" + type(e).__name__
                break
            if not body:
                r["end"] = "eof"
                break
        r["got"] = got
        r["complete"] = want is not None and got == want
        r["sha256"] = h.hexdigest()
        s.close()
    except Exception as e:  # any failure is a result the test judges
        r["end"] = "error:" + repr(e)
    results[i] = r

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--ca")
    ap.add_argument("--path", default="/config/worker")
    ap.add_argument("--accept", default="application/vnd.coreos.ignition+json;version=3.4.0, */*;q=0.1")
    ap.add_argument("-n", type=int, default=1)
    ap.add_argument("--head", action="store_true")
    ap.add_argument("--slow", action="store_true")
    ap.add_argument("--trickle", type=int)
    ap.add_argument("--go-file")
    ap.add_argument("--slow-mark-file")
    ap.add_argument("--mark-dir", help="a file per client, named by its index, once its head is in")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    results = [None] * a.n
    threads = [threading.Thread(target=one, args=(a, i, results)) for i in range(a.n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(90)
    with open(a.out + ".tmp", "w") as f:
        for r in results:
            f.write(json.dumps(r) + "\n")
    os.rename(a.out + ".tmp", a.out)

main()
