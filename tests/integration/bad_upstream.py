#!/usr/bin/env python3
"""An upstream that misbehaves on purpose, on 127.0.0.1:
  stall  reads the request, never answers
  cut    answers 200 with Content-Length: 1000000, sends 100000 body bytes, closes
         (with --cut-file, once that file exists)
  chunked  answers 200 with a chunked body of 300000 bytes (in chunks of odd sizes)
           and a trailer, keeping the connection open for the next request
  interim  answers 100 Continue, then 200 with Content-Length
  bighead  answers 200 "ok" with a head of --head-bytes (X-Pad-N fields)
  echo     answers 200 with the request head it got as the body, keeping the
           connection open; a request whose target holds "hold" is answered
           only once --release-file exists
  once     as echo, but each connection answers its first request only and
           closes when a second arrives: a keep-alive connection that died
           between two uses, as the gate's pool sees it
  unframed answers 200 with Connection: close and neither Content-Length
           nor chunked, 100000 body bytes, then closes cleanly (FIN)
  unframed-reset  the same, but resets the connection (SO_LINGER 0) after
           the bytes: a body cut short that the close cannot delimit
  trickle-head  sends a 200 head one byte every 100 ms, then a body
  stall-body  answers 200 with Content-Length: 1000000, sends 100000 body
           bytes, then sends nothing more until the proxy closes
  file     answers 200 with --file as the body (Content-Length), keeping the
           connection open for the next request
  drop     reads the request and closes without an answer
  gated    answers each request with --file as the body (Content-Length),
           keeping the connection open, once the file named by the last
           path segment of its target exists in --release-dir; writes the
           target to --count-file (the test sees which path got there)
  split    as gated, but sends the head and the first --split-bytes of the
           body once NAME exists, and the rest once NAME.rest exists
With --release-file, the modes file, cut and drop answer a request only
once that file exists (the test decides when an upstream fetch ends).
  reset-head  sends half a 200 head, then resets the connection
  extra-bytes  answers 200 with Content-Length: 100000 and 150000 body
           bytes on a connection it keeps open
  chunked-cut  answers 200 chunked, 300000 payload bytes, then closes
           without the last (zero) chunk
  trickle-body  answers 200 with Content-Length: 200, the body a byte
           every 10 ms
  scripted  answers its k-th request (from 0, over all connections) once
           --release-file exists, with status k of --statuses (comma
           separated; the last one repeats), the --extra-header line
           (%d: k) and the body "answer k" (Content-Length), keeping the
           connection open
Writes its port to --port-file once listening; counts requests in --count-file."""
import argparse, os, socket, struct, threading, time

def big_head(size):
    """A 200 "ok" whose head is exactly size bytes, padded by fields."""
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
    i = 0
    while len(head) + 2 < size:
        room = size - len(head) - 2
        name = b"X-Pad-%d: " % i
        value = min(200, room - len(name) - 2)
        if value < 1:
            head += b"X" * (room - 2) + b"\r\n" if room >= 3 else b""
            break
        head += name + b"v" * value + b"\r\n"
        i += 1
    return head + b"\r\n" + b"ok"

def read_head(conn):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        data += chunk
    return data

def serve_echo(conn, count_file, release_file, once=False):
    answered = 0
    while True:
        data = read_head(conn)
        if data is None:
            return
        if count_file:
            with open(count_file, "a") as f:
                f.write("req\n")
        if once and answered:
            conn.close()
            return
        answered += 1
        if b"hold" in data.split(b"\r\n", 1)[0]:
            deadline = time.monotonic() + 30
            while not os.path.exists(release_file) and time.monotonic() < deadline:
                time.sleep(0.01)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(data) + data)

def serve_gated(conn, count_file, args, split=None):
    body = open(args.file, "rb").read()
    while True:
        data = read_head(conn)
        if data is None:
            return
        target = data.split(b"\r\n", 1)[0].split(b" ")[1].decode()
        with open(count_file, "a") as f:
            f.write(target + "\n")
        gate = os.path.join(args.release_dir, target.rstrip("/").rsplit("/", 1)[-1])
        wait_for(gate)
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
        if split is None:
            conn.sendall(head + body)
            continue
        conn.sendall(head + body[:split])
        wait_for(gate + ".rest")
        conn.sendall(body[split:])

scripted_lock = threading.Lock()
scripted_next = [0]

def serve_scripted(conn, args):
    statuses = [int(s) for s in args.statuses.split(",")]
    while True:
        data = read_head(conn)
        if data is None:
            return
        with scripted_lock:
            k = scripted_next[0]
            scripted_next[0] += 1
            with open(args.count_file, "a") as f:
                f.write("req\n")
        wait_for(args.release_file)
        body = b"answer %d" % k
        extra = (args.extra_header.replace("%d", str(k)) + "\r\n").encode() if args.extra_header else b""
        conn.sendall(b"HTTP/1.1 %d Scripted\r\nContent-Length: %d\r\n" % (statuses[min(k, len(statuses) - 1)], len(body))
                     + extra + b"\r\n" + body)

def wait_for(path):
    deadline = time.monotonic() + 60
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.01)

def serve(conn, mode, count_file, args):
    try:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return
            data += chunk
        if count_file:
            with open(count_file, "a") as f:
                f.write("req\n")
        if mode in ("file", "cut", "drop") and args.release_file:
            deadline = time.monotonic() + 60
            while not os.path.exists(args.release_file) and time.monotonic() < deadline:
                time.sleep(0.01)
        if mode == "drop":
            return
        if mode == "file":
            body = open(args.file, "rb").read()
            while True:
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                             % len(body) + body)
                if read_head(conn) is None:
                    return
                if count_file:
                    with open(count_file, "a") as f:
                        f.write("req\n")
        if mode in ("unframed", "unframed-reset"):
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
                         + b"u" * 100000)
            if mode == "unframed-reset":
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return
        if mode == "reset-head":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Le")
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return
        if mode == "extra-bytes":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"e" * 150000)
            conn.recv(1)  # until the proxy closes
            return
        if mode == "chunked-cut":
            out = [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"]
            for _ in range(30):
                out.append(b"2710\r\n" + b"c" * 10000 + b"\r\n")
            conn.sendall(b"".join(out))
            return
        if mode == "trickle-body":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 200\r\n\r\n")
            for _ in range(200):
                conn.sendall(b"t")
                time.sleep(0.01)
            conn.recv(1)
            return
        if mode == "stall-body":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n" + b"x" * 100000)
            conn.recv(1)  # until the proxy gives up and closes
            return
        if mode == "trickle-head":
            for b in b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Slow: " + b"s" * 40 + b"\r\n\r\nok":
                conn.sendall(bytes([b]))
                time.sleep(0.1)
            return
        if mode == "bighead":
            conn.sendall(big_head(args.head_bytes))
            return
        if mode == "stall":
            conn.recv(1)  # until the proxy gives up and closes
            return
        if mode in ("chunked", "interim"):
            body = bytes((i * 7 + i // 251) % 256 for i in range(300000))
            while True:
                if mode == "interim":
                    conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n"
                                 b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
                else:
                    out = [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n"]
                    pos, size = 0, 1
                    while pos < len(body):
                        piece = body[pos:pos + size]
                        out.append(b"%x\r\n" % len(piece) + piece + b"\r\n")
                        pos += len(piece)
                        size = size * 3 + 7
                    out.append(b"0\r\nX-Sum: ok\r\n\r\n")
                    conn.sendall(b"".join(out))
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                if count_file:
                    with open(count_file, "a") as f:
                        f.write("req\n")
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 1000000\r\n\r\n" + b"x" * 100000)
        if args.cut_file:
            deadline = time.monotonic() + 60
            while not os.path.exists(args.cut_file) and time.monotonic() < deadline:
                time.sleep(0.01)
    finally:
        conn.close()

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["stall", "cut", "chunked", "interim", "bighead", "echo", "once", "unframed", "unframed-reset",
                                     "trickle-head", "stall-body", "file", "drop", "reset-head", "extra-bytes",
                                     "chunked-cut", "trickle-body", "gated", "split", "scripted"], required=True)
    ap.add_argument("--file")
    ap.add_argument("--cut-file")
    ap.add_argument("--head-bytes", type=int, default=12288)
    ap.add_argument("--release-file")
    ap.add_argument("--release-dir")
    ap.add_argument("--split-bytes", type=int)
    ap.add_argument("--statuses", default="200")
    ap.add_argument("--extra-header")
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--count-file")
    a = ap.parse_args()
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    with open(a.port_file + ".tmp", "w") as f:
        f.write(str(s.getsockname()[1]))
    os.rename(a.port_file + ".tmp", a.port_file)
    while True:
        c, _ = s.accept()
        if a.mode in ("echo", "once"):
            threading.Thread(target=serve_echo, args=(c, a.count_file, a.release_file, a.mode == "once"),
                             daemon=True).start()
        elif a.mode == "scripted":
            threading.Thread(target=serve_scripted, args=(c, a), daemon=True).start()
        elif a.mode in ("gated", "split"):
            threading.Thread(target=serve_gated, args=(c, a.count_file, a, a.split_bytes if a.mode == "split" else None),
                             daemon=True).start()
        else:
            threading.Thread(target=serve, args=(c, a.mode, a.count_file, a), daemon=True).start()

main()
