#!/usr/bin/env python3
"""An upstream that misbehaves on purpose, on 127.0.0.1:
  stall  reads the request, never answers
  cut    answers 200 with Content-Length: 1000000, sends 100000 body bytes, closes
  chunked  answers 200 with a chunked body of 300000 bytes (in chunks of odd sizes)
           and a trailer, keeping the connection open for the next request
  interim  answers 100 Continue, then 200 with Content-Length
Writes its port to --port-file once listening; counts requests in --count-file."""
import argparse, socket, threading

def serve(conn, mode, count_file):
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
    finally:
        conn.close()

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["stall", "cut", "chunked", "interim"], required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--count-file")
    a = ap.parse_args()
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    with open(a.port_file + ".tmp", "w") as f:
        f.write(str(s.getsockname()[1]))
    import os
    os.rename(a.port_file + ".tmp", a.port_file)
    while True:
        c, _ = s.accept()
        threading.Thread(target=serve, args=(c, a.mode, a.count_file), daemon=True).start()

main()
