#!/usr/bin/env python3
"""held_clients.py: the held-table scenarios of t_held.sh that need control
over connections and source addresses (issue 20.3-20.5).

  held_clients.py again  PORT ADMIN_ADDR ADMIN_SOCKET
      held on keep-alive connection A, admitted once on a new connection B
      that another worker took, then held again on A (20.3). Which worker a
      connection lands on is SO_REUSEPORT's hash: the script finds out
      through the table's bound (held.max_clients 4 with two workers: two
      clients a worker). Fillers from other addresses fill both shares; a
      probe of the node's on a new connection overflows only when the
      other worker took it (on A's it is the node's entry: a client is its
      address). The fillers are then forgotten (held.forget_after 3s) so
      that the admission on B finds room.
  held_clients.py many   PORT N [POOL] [TOKEN]
      N clients from 127.1.x.y (x = i / 250, y = i % 250 + 1), one request
      each on a connection of its own, for /config/POOL (a %d in POOL
      takes the client's number); prints how many answers had each status,
      as "503:N ..." (20.4, 20.5).

Loopback only; every wait is bounded."""
import http.client, json, socket, sys, time

ACCEPT = "application/vnd.coreos.ignition+json;version=3.4.0, */*;q=0.1"


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


class Client:
    """One keep-alive connection from a loopback source address."""

    def __init__(self, src, port):
        self.s = socket.socket()
        self.s.settimeout(10)
        self.s.bind((src, 0))
        self.s.connect(("127.0.0.1", port))
        self.buf = b""

    def get(self, path, token=None, close=False):
        head = "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: Ignition/2.14.0\r\nAccept: %s\r\n" % (path, ACCEPT)
        if token:
            head += "Authorization: Bearer %s\r\n" % token
        if close:
            head += "Connection: close\r\n"
        self.s.sendall((head + "\r\n").encode())
        while b"\r\n\r\n" not in self.buf:
            chunk = self.s.recv(65536)
            if not chunk:
                fail("%s: connection closed before an answer" % path)
            self.buf += chunk
        end = self.buf.index(b"\r\n\r\n") + 4
        lines = self.buf[:end].decode("latin-1").split("\r\n")
        length = 0
        for l in lines[1:]:
            if l.lower().startswith("content-length:"):
                length = int(l.split(":", 1)[1])
        while len(self.buf) < end + length:
            chunk = self.s.recv(65536)
            if not chunk:
                break
            self.buf += chunk
        self.buf = self.buf[end + length:]
        return int(lines[0].split()[1])

    def close(self):
        self.s.close()


def admin_get(admin, path):
    host, port = admin.rsplit(":", 1)
    c = http.client.HTTPConnection(host, int(port), timeout=10)
    c.request("GET", path)
    r = c.getresponse()
    body = r.read()
    c.close()
    return body


def held(admin):
    return json.loads(admin_get(admin, "/held"))


def entry(h, addr, pool):
    for e in h["clients"]:
        if e["address"] == addr and e["pool"] == pool:
            return e
    return None


def admin_post(sock, path, form):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(sock)
    body = form.encode()
    s.sendall(b"POST %s HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-www-form-urlencoded\r\n"
              b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (path.encode(), len(body), body))
    answer = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        answer += chunk
    s.close()
    status = int(answer.split(b" ", 2)[1])
    if status != 200:
        fail("POST %s %s: %r" % (path, form, answer))


def wait_for(what, cond, seconds=10):
    deadline = time.monotonic() + seconds
    while not cond():
        if time.monotonic() > deadline:
            fail("timed out waiting for " + what)
        time.sleep(0.02)


def decision(admin):
    return json.loads(admin_get(admin, "/verdict"))["decision"]


def again(port, admin, sock):
    node = "127.0.0.2"
    a = Client(node, port)
    if a.get("/config/worker") != 503:
        fail("A not held")
    answered_503 = 1
    h = held(admin)
    if not entry(h, node, "worker") or h["maxClients"] != 4:
        fail("A's worker: %s" % h)
    # Fill both workers' shares (two clients each) with other addresses,
    # a connection each: one beside the node on A's worker, two on the
    # other. A filler that lands on a full worker overflows, unlisted.
    for k in range(200):
        if len(held(admin)["clients"]) == 4:
            break
        f = Client("127.0.3.%d" % (k + 1), port)
        if f.get("/config/worker") != 503:
            fail("filler not held")
        f.close()
    else:
        fail("the shares not filled: %s" % held(admin))
    # B: a new connection of the node's that the other worker took. A
    # client is its address (issue 26): on A's worker it is the node's
    # entry again; on the other, full with fillers, it overflows.
    b = None
    for k in range(40):
        c = Client(node, port)
        overflow = held(admin)["overflow"]
        if c.get("/config/worker") != 503:
            fail("probe not held")
        if held(admin)["overflow"] > overflow:
            b = c
            break
        answered_503 += 1
        c.close()
    if not b:
        fail("40 new connections, all on A's worker")
    print("B on the other worker after %d connection(s)" % (k + 1))
    # The fillers are forgotten (held.forget_after), giving the other
    # worker room for the admission; A keeps the node fresh meanwhile.
    deadline = time.monotonic() + 15
    while len(held(admin)["clients"]) != 1:
        if time.monotonic() > deadline:
            fail("the fillers not forgotten: %s" % held(admin))
        if a.get("/config/worker") != 503:
            fail("A not held while the fillers age")
        answered_503 += 1
        time.sleep(0.3)
    admin_post(sock, "/override", "action=admit&for=30m")
    wait_for("the admit override", lambda: decision(admin) == "admit")
    # /verdict is the main thread's; each worker takes the new verdict a
    # moment later (its snapshot slot): B asks again, as Ignition would,
    # until its worker admits (a 503 before that is one more attempt).
    for _ in range(100):
        status = b.get("/config/worker")
        if status == 200:
            break
        if status != 503:
            fail("B got %d" % status)
        answered_503 += 1
        time.sleep(0.02)
    else:
        fail("B not admitted")
    wait_for("the admission to show", lambda: entry(held(admin), node, "worker")["admitted"])
    admin_post(sock, "/override", "action=clear")
    wait_for("the reject verdict again", lambda: decision(admin) == "reject")
    # The same on A's worker: a 200 until it takes the reject verdict.
    for _ in range(100):
        if a.get("/config/worker") == 503:
            break
        time.sleep(0.02)
    else:
        fail("A not held again")
    answered_503 += 1
    h = held(admin)
    e = entry(h, node, "worker")
    if e["admitted"] or e["admittedAt"] is not None or e["attempts"] != answered_503:
        fail("held again, shown as (%d answered 503): %s" % (answered_503, e))
    if h["admittedAfterHold"] != 1:
        fail("admittedAfterHold: %s" % h)
    a.close()
    b.close()


def many(port, n, pool, token):
    counts = {}
    for i in range(n):
        c = Client("127.1.%d.%d" % (i // 250, i % 250 + 1), port)
        path = "/config/%s" % (pool % i if "%" in pool else pool)
        status = c.get(path, token=token, close=True)
        counts[status] = counts.get(status, 0) + 1
        c.close()
    print(" ".join("%d:%d" % kv for kv in sorted(counts.items())))


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "again":
        again(int(sys.argv[2]), sys.argv[3], sys.argv[4])
    elif 4 <= len(sys.argv) <= 6 and sys.argv[1] == "many":
        many(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] if len(sys.argv) > 4 else "worker",
             sys.argv[5] if len(sys.argv) > 5 else None)
    else:
        fail(__doc__)
