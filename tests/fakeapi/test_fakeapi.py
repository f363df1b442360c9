#!/usr/bin/python3
"""Protocol tests for fakeapi.py: the watch stream, faults and control API,
checked on the wire with http.client (run by tests/integration/t_fakeapi_protocol.sh,
or directly: /usr/bin/python3 tests/fakeapi/test_fakeapi.py)."""

import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(HERE, "fakeapi.py")
BASE = "/apis/operator.openshift.io/v1/machineconfigurations"
TOKEN = "protocol-test-token"

SEED = {
    "apiVersion": "operator.openshift.io/v1", "kind": "MachineConfiguration",
    "metadata": {"name": "cluster", "resourceVersion": "100"},
    "spec": {"logLevel": "Normal"},
    "status": {"bootImageSkewEnforcementStatus": {
        "mode": "Automatic", "automatic": {"ocpVersion": "4.18.2", "rhcosVersion": "9.6.20250523-1"}}},
}


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except FileNotFoundError:
        return ""


class Fake:
    """One fakeapi process on a kernel-chosen loopback port."""

    def __init__(self, tmp, *extra):
        self.tmp = tmp
        pki = os.path.join(tmp, "pki")
        if not os.path.exists(os.path.join(pki, "ca.crt")):
            subprocess.run([os.path.join(HERE, "mkcerts.sh"), pki], check=True)
        with open(os.path.join(tmp, "token"), "w") as f:
            f.write(TOKEN + "\n")
        with open(os.path.join(tmp, "seed.json"), "w") as f:
            json.dump(SEED, f)
        port_file = os.path.join(tmp, "port")
        if os.path.exists(port_file):
            os.unlink(port_file)
        self.log = open(os.path.join(tmp, "fakeapi.log"), "ab")
        self.proc = subprocess.Popen(
            [sys.executable, SERVER, "--cert", os.path.join(pki, "server.crt"),
             "--key", os.path.join(pki, "server.key"), "--token-file", os.path.join(tmp, "token"),
             "--port-file", port_file, "--object", os.path.join(tmp, "seed.json")] + list(extra),
            stdout=subprocess.DEVNULL, stderr=self.log)
        deadline = time.monotonic() + 10
        while not _read(port_file):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("fakeapi did not start")
            time.sleep(0.05)
        self.port = int(_read(port_file))
        self.ctx = ssl.create_default_context(cafile=os.path.join(pki, "ca.crt"))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.log.close()

    def conn(self, timeout=10):
        return http.client.HTTPSConnection("127.0.0.1", self.port, context=self.ctx, timeout=timeout)

    def request(self, method, path, body=None, headers=None, token=TOKEN, conn=None):
        c = conn or self.conn()
        h = {"Accept": "application/json"}
        if token is not None:
            h["Authorization"] = "Bearer " + token
        h.update(headers or {})
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
            h.setdefault("Content-Type", "application/json")
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        data = r.read()
        if conn is None:
            c.close()
        return r.status, (json.loads(data) if data and r.getheader("Content-Type", "").startswith("application/json")
                          else data), r

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def ctl(self, **req):
        st, body, _ = self.request("POST", "/_fake/fault", body=req, token=None)
        assert st == 200, (st, body)
        return body

    def stats(self):
        st, body, _ = self.request("GET", "/_fake/stats", token=None)
        assert st == 200
        return body

    def wait(self, cond, what, secs=10):
        deadline = time.monotonic() + secs
        while time.monotonic() < deadline:
            if cond():
                return
            time.sleep(0.05)
        raise AssertionError("timed out waiting for " + what)


class Watch:
    """A watch stream read on a background thread into a list of events.  The
    chunked framing is parsed here, strictly, so that a clean end (the
    terminating zero-size chunk) can be told from a cut connection."""

    def __init__(self, fake, query, headers=None, path=BASE):
        raw = socket.create_connection(("127.0.0.1", fake.port), timeout=30)
        self.sock = fake.ctx.wrap_socket(raw, server_hostname="127.0.0.1")
        h = {"Host": "127.0.0.1:%d" % fake.port, "Authorization": "Bearer " + TOKEN,
             "Accept": "application/json", "User-Agent": "fakeapi-test"}
        h.update(headers or {})
        req = "GET %s?%s HTTP/1.1\r\n" % (path, query) + "".join("%s: %s\r\n" % kv for kv in h.items()) + "\r\n"
        self.sock.sendall(req.encode())
        self.f = self.sock.makefile("rb")
        self.status = int(self.f.readline().split()[1])
        self.headers = {}
        while True:
            line = self.f.readline().decode()
            if line in ("\r\n", "\n", ""):
                break
            k, v = line.split(":", 1)
            self.headers[k.strip().lower()] = v.strip()
        assert self.status == 200, self.status
        assert self.headers.get("transfer-encoding") == "chunked", self.headers
        self.events = []
        self.end = None       # "clean", "incomplete", "error:..."
        self.lock = threading.Lock()
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self):
        buf = b""
        try:
            while True:
                size_line = self.f.readline()
                if not size_line.endswith(b"\r\n"):
                    self.end = "incomplete"
                    return
                size = int(size_line.split(b";")[0], 16)
                if size == 0:
                    self.end = "clean" if self.f.readline() == b"\r\n" else "incomplete"
                    return
                data = self.f.read(size)
                if len(data) != size or self.f.read(2) != b"\r\n":
                    self.end = "incomplete"
                    return
                buf += data
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    try:
                        ev = json.loads(line)
                    except ValueError:
                        ev = {"type": "<garbage>", "line": line.decode(errors="replace") + "\n"}
                    with self.lock:
                        self.events.append(ev)
        except Exception as e:  # noqa: BLE001 - any failure ends the stream
            self.end = "error:%s" % e.__class__.__name__

    def types(self):
        with self.lock:
            return [e["type"] for e in self.events]

    def wait_for(self, pred, what, secs=10):
        deadline = time.monotonic() + secs
        while time.monotonic() < deadline:
            with self.lock:
                for e in self.events:
                    if pred(e):
                        return e
            time.sleep(0.05)
        raise AssertionError("timed out waiting for %s; got %s" % (what, self.types()))

    def wait_end(self, secs=10):
        self.t.join(secs)
        if self.t.is_alive():
            raise AssertionError("watch did not end within %ss; got %s" % (secs, self.types()))
        return self.end

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


class FakeApiTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="fakeapi-test.")
        cls.fake = Fake(cls.tmp, "--bookmark-interval", "0.3", "--history", "5", "--too-large-wait", "0.5")

    @classmethod
    def tearDownClass(cls):
        cls.fake.stop()
        if os.environ.get("FA_KEEP") != "1":
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        f = self.fake
        f.ctl(fault="clear")
        f.ctl(fault="config", status_on_main=False, validate=True, bookmark_interval=0.3, too_large_wait=0.5)
        f.ctl(fault="set_object", object=SEED)
        self.watches = []

    def tearDown(self):
        for w in self.watches:
            w.close()
        self.fake.wait(lambda: self.fake.stats()["currentWatchers"] == 0, "watchers to go away")

    def watch(self, query, **kw):
        w = Watch(self.fake, query, **kw)
        self.watches.append(w)
        return w

    def current_rv(self):
        st, obj, _ = self.fake.get(BASE + "/cluster")
        self.assertEqual(st, 200)
        return int(obj["metadata"]["resourceVersion"])

    # -- plain requests --
    def test_auth(self):
        for token in (None, "wrong"):
            st, body, _ = self.fake.get(BASE + "/cluster", token=token)
            self.assertEqual(st, 401)
            self.assertEqual(body, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                    "message": "Unauthorized", "reason": "Unauthorized", "code": 401})
        self.assertFalse(self.fake.stats()["lastTokenValid"])
        st, _, _ = self.fake.get("/version")
        self.assertEqual(st, 200)
        self.assertTrue(self.fake.stats()["lastTokenValid"])

    def test_keepalive_and_list(self):
        c = self.fake.conn()
        st, lst, r = self.fake.get(BASE, conn=c)
        self.assertEqual(st, 200)
        self.assertEqual(lst["kind"], "MachineConfigurationList")
        self.assertEqual(lst["metadata"]["resourceVersion"], str(self.current_rv()))
        self.assertEqual([i["metadata"]["name"] for i in lst["items"]], ["cluster"])
        sock = c.sock
        st, lst, _ = self.fake.get(BASE + "?fieldSelector=metadata.name%3Dother", conn=c)
        self.assertIs(c.sock, sock, "connection was not kept alive")
        self.assertEqual(lst["items"], [])
        st, lst, _ = self.fake.get(BASE + "?labelSelector=a%20in%20(b,c)", conn=c)
        self.assertEqual((st, lst["items"]), (200, []))
        st, body, _ = self.fake.get(BASE + "?fieldSelector=spec.x%3D1", conn=c)
        self.assertEqual((st, body["reason"]), (400, "BadRequest"))
        c.close()

    def test_not_found(self):
        st, body, _ = self.fake.get(BASE + "/nope")
        self.assertEqual(st, 404)
        self.assertEqual(body["reason"], "NotFound")
        self.assertEqual(body["message"], 'machineconfigurations.operator.openshift.io "nope" not found')
        self.assertEqual(body["details"], {"name": "nope", "group": "operator.openshift.io",
                                           "kind": "machineconfigurations"})

    def test_update_conflict_and_noop(self):
        st, obj, _ = self.fake.get(BASE + "/cluster")
        rv = obj["metadata"]["resourceVersion"]
        stale = json.loads(json.dumps(obj))
        obj["spec"]["logLevel"] = "Debug"
        st, new, _ = self.fake.request("PUT", BASE + "/cluster", body=obj)
        self.assertEqual(st, 200, new)
        self.assertGreater(int(new["metadata"]["resourceVersion"]), int(rv))
        self.assertEqual(new["metadata"]["generation"], obj["metadata"]["generation"] + 1)
        st, body, _ = self.fake.request("PUT", BASE + "/cluster", body=stale)
        self.assertEqual((st, body["reason"]), (409, "Conflict"))
        # a no-op patch gets no new resourceVersion
        st, same, _ = self.fake.request("PATCH", BASE + "/cluster", body={"spec": {"logLevel": "Debug"}},
                                        headers={"Content-Type": "application/merge-patch+json"})
        self.assertEqual(same["metadata"]["resourceVersion"], new["metadata"]["resourceVersion"])
        # a patch carrying a stale resourceVersion conflicts
        st, body, _ = self.fake.request("PATCH", BASE + "/cluster",
                                        body={"metadata": {"resourceVersion": rv}, "spec": {"logLevel": "Trace"}},
                                        headers={"Content-Type": "application/merge-patch+json"})
        self.assertEqual(st, 409)

    def test_status_on_main_knob(self):
        patch = {"status": {"bootImageSkewEnforcementStatus": {"mode": "None", "automatic": None}}}
        hdr = {"Content-Type": "application/merge-patch+json"}
        st, obj, _ = self.fake.request("PATCH", BASE + "/cluster", body=patch, headers=hdr)
        self.assertEqual(obj["status"]["bootImageSkewEnforcementStatus"]["mode"], "Automatic")
        self.fake.ctl(fault="config", status_on_main=True)
        st, obj, _ = self.fake.request("PATCH", BASE + "/cluster", body=patch, headers=hdr)
        self.assertEqual(obj["status"]["bootImageSkewEnforcementStatus"], {"mode": "None"})

    def test_status_500(self):
        self.fake.ctl(fault="status_500", count=2, kinds=["get"])
        st, _, _ = self.fake.get("/version")
        self.assertEqual(st, 200, "a discovery request is not of kind get")
        for _ in range(2):
            st, body, _ = self.fake.get(BASE + "/cluster")
            self.assertEqual((st, body["reason"], body["code"]), (500, "InternalError", 500))
        st, _, _ = self.fake.get(BASE + "/cluster")
        self.assertEqual(st, 200)
        self.fake.ctl(fault="fail", count=1, code=429, retry_after=2)
        st, body, r = self.fake.get(BASE)
        self.assertEqual((st, body["reason"], r.getheader("Retry-After")), (429, "TooManyRequests", "2"))

    def test_forbid(self):
        machines = "/apis/machine.openshift.io/v1beta1/namespaces/openshift-machine-api/machines"
        self.fake.ctl(fault="forbid", resource="machines.machine.openshift.io")
        self.assertEqual(self.fake.stats()["forbidden"], ["machines.machine.openshift.io"])
        st, body, _ = self.fake.get(machines + "?limit=500")
        self.assertEqual((st, body["reason"], body["code"]), (403, "Forbidden", 403))
        self.assertEqual(body["message"], 'machines.machine.openshift.io is forbidden: User '
                         '"system:serviceaccount:skewgate:skewgate" cannot list resource "machines" in API group '
                         '"machine.openshift.io" in the namespace "openshift-machine-api"')
        self.assertEqual(body["details"], {"group": "machine.openshift.io", "kind": "machines"})
        st, body, _ = self.fake.get(machines + "?watch=1&timeoutSeconds=1")
        self.assertEqual(st, 403)
        self.assertIn("cannot watch resource", body["message"])
        for other in ("/api/v1/nodes", "/apis/cluster.x-k8s.io/v1beta1/namespaces/x/machines", BASE + "/cluster"):
            st, _, _ = self.fake.get(other)
            self.assertEqual(st, 200, other)
        st, _, _ = self.fake.get(machines, token="wrong")
        self.assertEqual(st, 401, "authentication comes first")
        self.fake.ctl(fault="allow", resource="machines.machine.openshift.io")
        st, _, _ = self.fake.get(machines)
        self.assertEqual(st, 200)
        self.fake.ctl(fault="forbid", resource="machineconfigurations.operator.openshift.io")
        self.fake.ctl(fault="forbid", resource="nodes")
        st, body, _ = self.fake.get(BASE + "/cluster")
        self.assertEqual(body["message"], 'machineconfigurations.operator.openshift.io "cluster" is forbidden: User '
                         '"system:serviceaccount:skewgate:skewgate" cannot get resource "machineconfigurations" in '
                         'API group "operator.openshift.io" at the cluster scope')
        self.assertEqual(body["details"], {"group": "operator.openshift.io", "kind": "machineconfigurations",
                                           "name": "cluster"})
        st, body, _ = self.fake.get("/api/v1/nodes")
        self.assertEqual((st, body["message"]), (403, 'nodes is forbidden: User "system:serviceaccount:skewgate:skewgate" '
                                                      'cannot list resource "nodes" in API group "" at the cluster scope'))
        st, _, _ = self.fake.get("/version")
        self.assertEqual(st, 200, "discovery is not forbidden")
        self.fake.ctl(fault="clear")
        self.assertEqual(self.fake.stats()["forbidden"], [])
        st, _, _ = self.fake.get(BASE + "/cluster")
        self.assertEqual(st, 200)
        st, body, _ = self.fake.request("POST", "/_fake/fault", body={"fault": "forbid", "resource": "pods"}, token=None)
        self.assertEqual(st, 400)

    def test_stall(self):
        self.fake.ctl(fault="stall", seconds=0.6)
        t0 = time.monotonic()
        st, _, _ = self.fake.get(BASE + "/cluster")
        self.assertEqual(st, 200)
        self.assertGreaterEqual(time.monotonic() - t0, 0.45)
        self.fake.ctl(fault="stall", seconds=30)
        self.fake.ctl(fault="clear")
        t0 = time.monotonic()
        self.fake.get(BASE + "/cluster")
        self.assertLess(time.monotonic() - t0, 5)

    # -- watches --
    def test_watch_events_and_bookmarks(self):
        rv = self.current_rv()
        w = self.watch("watch=1&allowWatchBookmarks=true&resourceVersion=%d&timeoutSeconds=20" % rv)
        bm = w.wait_for(lambda e: e["type"] == "BOOKMARK", "a bookmark")
        self.assertEqual(bm["object"], {"kind": "MachineConfiguration", "apiVersion": "operator.openshift.io/v1",
                                        "metadata": {"resourceVersion": str(rv)}})
        obj = dict(SEED, spec={"logLevel": "Debug"})
        self.fake.ctl(fault="set_object", object=obj)
        m = w.wait_for(lambda e: e["type"] == "MODIFIED", "MODIFIED")
        self.assertEqual(m["object"]["spec"], {"logLevel": "Debug"})
        self.assertGreater(int(m["object"]["metadata"]["resourceVersion"]), rv)
        self.fake.ctl(fault="delete_object", name="cluster")
        d = w.wait_for(lambda e: e["type"] == "DELETED", "DELETED")
        self.assertGreater(int(d["object"]["metadata"]["resourceVersion"]),
                           int(m["object"]["metadata"]["resourceVersion"]))
        self.fake.ctl(fault="set_object", object=SEED)
        a = w.wait_for(lambda e: e["type"] == "ADDED", "ADDED")
        self.assertEqual(a["object"]["metadata"]["generation"], 1)
        later = w.wait_for(lambda e: e["type"] == "BOOKMARK" and
                           e["object"]["metadata"]["resourceVersion"] == a["object"]["metadata"]["resourceVersion"],
                           "a bookmark at the newest resourceVersion")
        self.assertTrue(later)

    def test_watch_no_bookmarks_unless_asked(self):
        rv = self.current_rv()
        w = self.watch("watch=true&resourceVersion=%d&timeoutSeconds=1" % rv)
        self.assertEqual(w.wait_end(5), "clean")
        self.assertEqual(w.types(), [])

    def test_watch_timeout_ends_cleanly(self):
        rv = self.current_rv()
        t0 = time.monotonic()
        w = self.watch("watch=1&allowWatchBookmarks=true&resourceVersion=%d&timeoutSeconds=1" % rv)
        self.assertEqual(w.wait_end(5), "clean")
        self.assertGreaterEqual(time.monotonic() - t0, 0.9)
        self.assertIn("BOOKMARK", w.types())

    def test_watch_replays_from_rv(self):
        rv0 = self.current_rv()
        for lvl in ("Debug", "Trace"):
            self.fake.ctl(fault="set_object", object=dict(SEED, spec={"logLevel": lvl}))
        w = self.watch("watch=1&resourceVersion=%d&timeoutSeconds=5" % rv0)
        w.wait_for(lambda e: e["type"] == "MODIFIED" and e["object"]["spec"]["logLevel"] == "Trace", "replay")
        self.assertEqual([e["object"]["spec"]["logLevel"] for e in w.events[:2]], ["Debug", "Trace"])
        # resourceVersion "0" / unset: the current state as ADDED
        w0 = self.watch("watch=1&resourceVersion=0&timeoutSeconds=5")
        a = w0.wait_for(lambda e: e["type"] == "ADDED", "initial ADDED")
        self.assertEqual(a["object"]["spec"]["logLevel"], "Trace")

    def test_watch_too_old_gives_410(self):
        rv0 = self.current_rv()
        for i in range(6):  # history window is 5 events
            self.fake.ctl(fault="set_object", object=dict(SEED, spec={"logLevel": "Debug" if i % 2 else "Trace"}))
        w = self.watch("watch=1&resourceVersion=%d" % rv0)
        self.assertEqual(w.wait_end(5), "clean")
        self.assertEqual(len(w.events), 1)
        e = w.events[0]
        self.assertEqual(e["type"], "ERROR")
        self.assertEqual((e["object"]["kind"], e["object"]["code"], e["object"]["reason"]), ("Status", 410, "Expired"))
        self.assertRegex(e["object"]["message"], r"^too old resource version: %d \(\d+\)$" % rv0)

    def test_expire(self):
        rv0 = self.current_rv()
        self.fake.ctl(fault="set_object", object=dict(SEED, spec={"logLevel": "Debug"}))
        live = self.watch("watch=1&resourceVersion=%d" % self.current_rv())
        self.fake.wait(lambda: self.fake.stats()["currentWatchers"] >= 1, "watch open")
        self.fake.ctl(fault="expire")
        w = self.watch("watch=1&resourceVersion=%d" % rv0)
        self.assertEqual(w.wait_end(5), "clean")
        self.assertEqual(w.events[0]["object"]["code"], 410)
        # an up-to-date watch survives a plain expire, and ends with 410 on notify
        self.fake.ctl(fault="expire", notify=True)
        e = live.wait_for(lambda e: e["type"] == "ERROR", "410 on the open watch")
        self.assertEqual(e["object"]["code"], 410)
        self.assertEqual(live.wait_end(5), "clean")

    def test_too_large_rv(self):
        w = self.watch("watch=1&resourceVersion=%d" % (self.current_rv() + 1000))
        self.assertEqual(w.wait_end(5), "clean")
        e = w.events[0]
        self.assertEqual((e["type"], e["object"]["code"], e["object"]["reason"]), ("ERROR", 504, "Timeout"))
        self.assertEqual(e["object"]["details"]["causes"][0]["reason"], "ResourceVersionTooLarge")

    def test_drop_watches(self):
        w = self.watch("watch=1&resourceVersion=%d" % self.current_rv())
        w2 = self.watch("watch=1&allowWatchBookmarks=true&resourceVersion=%d" % self.current_rv())
        self.fake.wait(lambda: self.fake.stats()["currentWatchers"] >= 2, "two watches")
        self.assertEqual(self.fake.ctl(fault="drop_watches")["dropped"], 2)
        self.assertEqual(w.wait_end(5), "incomplete")     # no terminating chunk
        self.assertEqual(w2.wait_end(5), "incomplete")
        w3 = self.watch("watch=1&resourceVersion=%d" % self.current_rv())
        self.fake.wait(lambda: self.fake.stats()["currentWatchers"] >= 1, "a new watch")
        self.fake.ctl(fault="drop_watches", rst=True)
        self.assertIn(w3.wait_end(5), ("incomplete", "error:ConnectionResetError", "error:SSLError"))

    def test_garbage_and_watch_error(self):
        w = self.watch("watch=1&resourceVersion=%d" % self.current_rv())
        self.fake.wait(lambda: self.fake.stats()["currentWatchers"] >= 1, "watch open")
        self.fake.ctl(fault="garbage", text="<html>proxy error</html>")
        g = w.wait_for(lambda e: e["type"] == "<garbage>", "garbage")
        self.assertEqual(g["line"], "<html>proxy error</html>\n")
        self.fake.ctl(fault="watch_error", code=500, message="boom")
        e = w.wait_for(lambda e: e["type"] == "ERROR", "ERROR")
        self.assertEqual((e["object"]["code"], e["object"]["message"]), (500, "boom"))
        self.assertEqual(w.wait_end(5), "clean")

    def test_stall_watches(self):
        w = self.watch("watch=1&resourceVersion=%d" % self.current_rv())
        self.fake.wait(lambda: self.fake.stats()["currentWatchers"] >= 1, "watch open")
        self.fake.ctl(fault="stall", seconds=0.8, watches=True)
        t0 = time.monotonic()
        self.fake.ctl(fault="set_object", object=dict(SEED, spec={"logLevel": "Debug"}))
        w.wait_for(lambda e: e["type"] == "MODIFIED", "MODIFIED after the stall")
        self.assertGreaterEqual(time.monotonic() - t0, 0.5)

    def test_send_initial_events(self):
        w = self.watch("watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
                       "&allowWatchBookmarks=true&timeoutSeconds=3")
        bm = w.wait_for(lambda e: e["type"] == "BOOKMARK", "initial-events-end bookmark")
        self.assertEqual(bm["object"]["metadata"]["annotations"], {"k8s.io/initial-events-end": "true"})
        self.assertEqual(w.types()[0], "ADDED")

    def test_field_selector_filters_events_but_bookmarks_advance(self):
        rv = self.current_rv()
        w = self.watch("watch=1&allowWatchBookmarks=true&fieldSelector=metadata.name%%3Dother&resourceVersion=%d" % rv)
        self.fake.ctl(fault="set_object", object=dict(SEED, spec={"logLevel": "Debug"}))
        new_rv = self.current_rv()
        w.wait_for(lambda e: e["type"] == "BOOKMARK" and int(e["object"]["metadata"]["resourceVersion"]) >= new_rv,
                   "a bookmark past the filtered event")
        self.assertNotIn("MODIFIED", w.types())

    def test_client_close_is_noticed(self):
        w = self.watch("watch=1&resourceVersion=%d" % self.current_rv())
        self.fake.wait(lambda: self.fake.stats()["currentWatchers"] >= 1, "watch open")
        w.close()
        self.fake.wait(lambda: self.fake.stats()["currentWatchers"] == 0, "the server to notice", 5)

    def test_stats(self):
        s = self.fake.stats()
        for k in ("requestsByKind", "requestsByCode", "currentWatchers", "watchesTotal", "lastTokenValid",
                  "resourceVersion", "historyFloor", "objects", "recentRequests"):
            self.assertIn(k, s)
        self.assertEqual(s["objects"], ["cluster"])
        self.assertFalse(any(TOKEN in json.dumps(r) for r in s["recentRequests"]))


NS = "openshift-skewgate"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/%s/leases" % NS
MERGE = {"Content-Type": "application/merge-patch+json"}


def lease(name, holder="gate-a", labels=None, **spec):
    md = {"name": name}
    if labels is not None:
        md["labels"] = labels
    sp = {"holderIdentity": holder, "leaseDurationSeconds": 30,
          "acquireTime": "2026-12-04T19:20:30.123456Z", "renewTime": "2026-12-04T19:20:30.123456Z"}
    sp.update(spec)
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": md, "spec": sp}


class LeaseApiTest(unittest.TestCase):
    """coordination.k8s.io/v1 Leases: the writes the gates' shared line uses, on the wire."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="fakeapi-lease-test.")
        cls.fake = Fake(cls.tmp, "--bookmark-interval", "0.3")

    @classmethod
    def tearDownClass(cls):
        cls.fake.stop()
        if os.environ.get("FA_KEEP") != "1":
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        f = self.fake
        f.ctl(fault="clear")
        st, lst, _ = f.get("/_fake/leases", token=None)
        for o in lst["items"]:
            f.ctl(fault="delete_lease", namespace=o["metadata"]["namespace"], name=o["metadata"]["name"])
        self.watches = []

    def tearDown(self):
        for w in self.watches:
            w.close()
        self.fake.wait(lambda: self.fake.stats()["currentWatchers"] == 0, "watchers to go away")

    def watch(self, query, path=LEASES):
        w = Watch(self.fake, query, path=path)
        self.watches.append(w)
        return w

    def create(self, obj, expect=201):
        st, body, _ = self.fake.request("POST", LEASES, body=obj)
        self.assertEqual(st, expect, body)
        return body

    def test_discovery(self):
        st, groups, _ = self.fake.get("/apis")
        g = [x for x in groups["groups"] if x["name"] == "coordination.k8s.io"]
        self.assertEqual(g[0]["preferredVersion"], {"groupVersion": "coordination.k8s.io/v1", "version": "v1"})
        st, rl, _ = self.fake.get("/apis/coordination.k8s.io/v1")
        self.assertEqual(rl["resources"], [{"name": "leases", "singularName": "lease", "namespaced": True,
                                            "kind": "Lease", "verbs": ["create", "delete", "deletecollection", "get",
                                                                       "list", "patch", "update", "watch"],
                                            "storageVersionHash": "fakeapiHash="}])
        st, g, _ = self.fake.get("/apis/coordination.k8s.io")
        self.assertEqual((st, g["kind"]), (200, "APIGroup"))

    def test_create_get_and_already_exists(self):
        a = self.create(lease("node-1", labels={"skewgate.openshift.io/line": "joining"}))
        self.assertEqual(a["metadata"]["namespace"], NS)
        self.assertEqual(a["spec"]["renewTime"], "2026-12-04T19:20:30.123456Z")
        self.assertNotIn("generation", a["metadata"])
        self.assertTrue(a["metadata"]["uid"] and a["metadata"]["resourceVersion"].isdigit())
        st, got, _ = self.fake.get(LEASES + "/node-1")
        self.assertEqual((st, got), (200, a))
        body = self.create(lease("node-1", holder="gate-b"), 409)
        self.assertEqual((body["reason"], body["message"]),
                         ("AlreadyExists", 'leases.coordination.k8s.io "node-1" already exists'))
        self.assertEqual(body["details"], {"name": "node-1", "group": "coordination.k8s.io", "kind": "leases"})
        st, got, _ = self.fake.get(LEASES + "/node-1")
        self.assertEqual(got["spec"]["holderIdentity"], "gate-a", "the loser of a create race changes nothing")
        g = lease("")
        g["metadata"] = {"generateName": "line-"}
        made = self.create(g)
        self.assertRegex(made["metadata"]["name"], r"^line-[a-z0-9]{5}$")
        st, body, _ = self.fake.get(LEASES + "/nope")
        self.assertEqual((st, body["message"]), (404, 'leases.coordination.k8s.io "nope" not found'))
        st, body, _ = self.fake.request("POST", "/apis/coordination.k8s.io/v1/namespaces/other/leases",
                                        body=dict(lease("x"), metadata={"name": "x", "namespace": NS}))
        self.assertEqual((st, body["reason"]), (400, "BadRequest"))

    def test_update_conflict_and_unconditional(self):
        a = self.create(lease("line"))
        upd = json.loads(json.dumps(a))
        upd["spec"]["holderIdentity"] = "gate-b"
        st, b, _ = self.fake.request("PUT", LEASES + "/line", body=upd)
        self.assertEqual(st, 200, b)
        self.assertGreater(int(b["metadata"]["resourceVersion"]), int(a["metadata"]["resourceVersion"]))
        self.assertEqual(b["metadata"]["uid"], a["metadata"]["uid"])
        st, body, _ = self.fake.request("PUT", LEASES + "/line", body=upd)  # a's resourceVersion: stale now
        self.assertEqual((st, body["reason"]), (409, "Conflict"))
        self.assertEqual(body["message"], 'Operation cannot be fulfilled on leases.coordination.k8s.io "line": the '
                         "object has been modified; please apply your changes to the latest version and try again")
        self.assertEqual(body["details"], {"name": "line", "group": "coordination.k8s.io", "kind": "leases"})
        # the lease strategy refuses unconditional updates (AllowUnconditionalUpdate false)
        noversion = lease("line", holder="gate-c")
        st, body, _ = self.fake.request("PUT", LEASES + "/line", body=noversion)
        self.assertEqual((st, body["reason"]), (422, "Invalid"))
        self.assertEqual(body["message"], 'leases.coordination.k8s.io "line" is invalid: metadata.resourceVersion: '
                         "Invalid value: 0x0: must be specified for an update")
        # ... and allows create on update: a PUT of a missing Lease creates it
        st, body, _ = self.fake.request("PUT", LEASES + "/fresh", body=lease("fresh"))
        self.assertEqual((st, body["metadata"]["name"]), (201, "fresh"))
        # merge patch, with and without a resourceVersion precondition
        st, p, _ = self.fake.request("PATCH", LEASES + "/line", body={"spec": {"holderIdentity": "gate-d"}},
                                     headers=MERGE)
        self.assertEqual((st, p["spec"]["holderIdentity"]), (200, "gate-d"))
        st, body, _ = self.fake.request("PATCH", LEASES + "/line", headers=MERGE, body={
            "metadata": {"resourceVersion": b["metadata"]["resourceVersion"]}, "spec": {"holderIdentity": "x"}})
        self.assertEqual(st, 409)
        st, same, _ = self.fake.request("PATCH", LEASES + "/line", body={"spec": {"holderIdentity": "gate-d"}},
                                        headers=MERGE)
        self.assertEqual(same["metadata"]["resourceVersion"], p["metadata"]["resourceVersion"], "no-op: no new rv")
        st, body, _ = self.fake.request("PATCH", LEASES + "/gone", body={"spec": {}}, headers=MERGE)
        self.assertEqual(st, 404)
        # fault lease_conflicts: the next update conflicts even with the right resourceVersion
        self.fake.ctl(fault="lease_conflicts", count=1)
        cur = self.fake.get(LEASES + "/line")[1]
        cur["spec"]["holderIdentity"] = "gate-e"
        st, _, _ = self.fake.request("PUT", LEASES + "/line", body=cur)
        self.assertEqual(st, 409)
        st, _, _ = self.fake.request("PUT", LEASES + "/line", body=cur)
        self.assertEqual(st, 200)

    def test_delete_preconditions(self):
        a = self.create(lease("slot"))
        opts = lambda **pc: {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": pc}
        st, body, _ = self.fake.request("DELETE", LEASES + "/slot", body=opts(resourceVersion="1"))
        self.assertEqual((st, body["reason"]), (409, "Conflict"))
        self.assertIn("Precondition failed: ResourceVersion in precondition: 1, ResourceVersion in object meta: %s"
                      % a["metadata"]["resourceVersion"], body["message"])
        st, body, _ = self.fake.request("DELETE", LEASES + "/slot", body=opts(uid="not-it"))
        self.assertEqual((st, body["reason"]), (409, "Conflict"))
        st, body, _ = self.fake.request("DELETE", LEASES + "/slot", body=opts(
            resourceVersion=a["metadata"]["resourceVersion"], uid=a["metadata"]["uid"]))
        self.assertEqual((st, body["status"]), (200, "Success"))
        self.assertEqual(body["details"], {"name": "slot", "group": "coordination.k8s.io", "kind": "leases",
                                           "uid": a["metadata"]["uid"]})
        st, body, _ = self.fake.request("DELETE", LEASES + "/slot")
        self.assertEqual((st, body["reason"]), (404, "NotFound"))

    def test_validation(self):
        bad = [({"renewTime": "2026-12-04T19:20:30Z"}, 400,
                'Lease in version "v1" cannot be handled as a Lease: parsing time "2026-12-04T19:20:30Z" as '
                '"2006-01-02T15:04:05.000000Z07:00": cannot parse "Z" as ".000000"'),
               ({"acquireTime": "2026-12-04T19:20:30.123Z"}, 400, 'cannot parse ".123Z" as ".000000"'),
               ({"acquireTime": "2026-12-04T19:20:30.1234567Z"}, 400, 'cannot parse "7Z" as "Z07:00"'),
               ({"leaseDurationSeconds": 0}, 422, 'Lease.coordination.k8s.io "v" is invalid: '
                'spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0'),
               ({"leaseDurationSeconds": 2 ** 31}, 400, "json: cannot unmarshal number 2147483648 into Go struct "
                "field LeaseSpec.spec.leaseDurationSeconds of type int32"),
               ({"holderIdentity": 7}, 400, "cannot unmarshal number into Go struct field "
                "LeaseSpec.spec.holderIdentity of type string")]
        for spec, code, msg in bad:
            st, body, _ = self.fake.request("POST", LEASES, body=lease("v", **spec))
            self.assertEqual(st, code, (spec, body))
            self.assertIn(msg, body["message"])
        st, body, _ = self.fake.request("POST", LEASES, body=lease("Bad_Name"))
        self.assertEqual((st, body["reason"], body["details"]["causes"][0]["field"]), (422, "Invalid", "metadata.name"))
        st, body, _ = self.fake.request("POST", LEASES, body=lease("x" * 254))
        self.assertEqual(st, 422)
        big = lease("big")
        big["metadata"]["annotations"] = {"a": "x" * (256 * 1024)}
        st, body, _ = self.fake.request("POST", LEASES, body=big)
        self.assertEqual((st, body["message"]), (422, 'Lease.coordination.k8s.io "big" is invalid: '
                                                      "metadata.annotations: Too long: may not be more than 262144 bytes"))
        st, body, _ = self.fake.request("POST", LEASES, body=lease("lbl", labels={"a b": "c"}))
        self.assertEqual(st, 422)
        # an offset is accepted and written back in UTC; unknown fields are dropped (Strict: refused)
        ok = lease("ok", renewTime="2026-12-04T21:20:30.000001+02:00")
        ok["spec"]["color"] = "blue"
        st, body, r = self.fake.request("POST", LEASES, body=ok)
        self.assertEqual((st, body["spec"]["renewTime"]), (201, "2026-12-04T19:20:30.000001Z"))
        self.assertNotIn("color", body["spec"])
        self.assertIn('unknown field \\"spec.color\\"', r.getheader("Warning"))
        st, body, _ = self.fake.request("POST", LEASES + "?fieldValidation=Strict", body=dict(ok, metadata={"name": "s"}))
        self.assertEqual((st, body["message"]), (400, 'Lease in version "v1" cannot be handled as a Lease: strict '
                                                      'decoding error: unknown field "spec.color"'))
        st, body, _ = self.fake.request("PATCH", LEASES + "/ok", body={"spec": {"renewTime": "now"}}, headers=MERGE)
        self.assertEqual((st, body["reason"]), (422, "Invalid"))

    def test_list_selectors_and_paging(self):
        for i in range(5):
            self.create(lease("n-%d" % i, labels={"role": "joining" if i % 2 else "waiting", "i": str(i)}))
        other = "/apis/coordination.k8s.io/v1/namespaces/elsewhere/leases"
        st, _, _ = self.fake.request("POST", other, body=lease("n-9", labels={"role": "joining"}))
        self.assertEqual(st, 201)
        names = lambda lst: [o["metadata"]["name"] for o in lst["items"]]
        st, lst, _ = self.fake.get(LEASES + "?labelSelector=role%3Djoining")
        self.assertEqual((lst["kind"], lst["apiVersion"], names(lst)), ("LeaseList", "coordination.k8s.io/v1",
                                                                        ["n-1", "n-3"]))
        self.assertNotIn("kind", lst["items"][0], "a typed list's items carry no kind")
        st, lst, _ = self.fake.get(LEASES + "?labelSelector=role%20in%20(waiting),i!%3D0")
        self.assertEqual(names(lst), ["n-2", "n-4"])
        st, lst, _ = self.fake.get(LEASES + "?labelSelector=role")
        self.assertEqual(len(lst["items"]), 5)
        st, lst, _ = self.fake.get("/apis/coordination.k8s.io/v1/leases?labelSelector=role%3Djoining")
        self.assertEqual(names(lst), ["n-9", "n-1", "n-3"], "by namespace, then name, as etcd keys sort")
        st, lst, _ = self.fake.get("/apis/coordination.k8s.io/v1/leases?fieldSelector=metadata.namespace%3Delsewhere")
        self.assertEqual(names(lst), ["n-9"])
        seen, cont, pages = [], "", 0
        while True:
            st, lst, _ = self.fake.get(LEASES + "?limit=2" + ("&continue=" + cont if cont else ""))
            self.assertEqual(st, 200, lst)
            seen += names(lst)
            pages += 1
            cont = lst["metadata"].get("continue")
            if not cont:
                break
        self.assertEqual((seen, pages), (["n-%d" % i for i in range(5)], 3))
        rv = int(lst["metadata"]["resourceVersion"])
        st, lst, _ = self.fake.get(LEASES + "?resourceVersion=%d" % rv)
        self.assertEqual(st, 200)
        st, body, _ = self.fake.request("DELETE", LEASES + "?labelSelector=role%3Dwaiting")
        self.assertEqual((st, names(body)), (200, ["n-0", "n-2", "n-4"]))
        st, lst, _ = self.fake.get(LEASES)
        self.assertEqual(names(lst), ["n-1", "n-3"])

    def test_watch_events_and_label_selector(self):
        st, lst, _ = self.fake.get(LEASES)
        rv = lst["metadata"]["resourceVersion"]
        w = self.watch("watch=1&allowWatchBookmarks=true&labelSelector=line%%3Dyes&resourceVersion=%s" % rv)
        legacy = self.watch("resourceVersion=%s" % rv, path="/apis/coordination.k8s.io/v1/watch/namespaces/%s/leases" % NS)
        a = self.create(lease("w1", labels={"line": "yes"}))
        self.create(lease("w2", labels={"line": "no"}))
        a["spec"]["holderIdentity"] = "gate-b"
        st, b, _ = self.fake.request("PUT", LEASES + "/w1", body=a)
        self.assertEqual(st, 200)
        st, _, _ = self.fake.request("DELETE", LEASES + "/w1")
        self.assertEqual(st, 200)
        d = w.wait_for(lambda e: e["type"] == "DELETED", "DELETED")
        self.assertGreater(int(d["object"]["metadata"]["resourceVersion"]), int(b["metadata"]["resourceVersion"]))
        evs = [(e["type"], e["object"]["metadata"]["name"]) for e in w.events if e["type"] != "BOOKMARK"]
        self.assertEqual(evs, [("ADDED", "w1"), ("MODIFIED", "w1"), ("DELETED", "w1")])
        self.assertEqual(w.events[1]["object"]["kind"], "Lease")
        legacy.wait_for(lambda e: e["type"] == "DELETED", "DELETED on the legacy watch path")
        self.assertEqual([e["object"]["metadata"]["name"] for e in legacy.events], ["w1", "w2", "w1", "w1"])
        bm = w.wait_for(lambda e: e["type"] == "BOOKMARK", "a bookmark")
        self.assertEqual((bm["object"]["kind"], bm["object"]["apiVersion"]), ("Lease", "coordination.k8s.io/v1"))
        # the shared history: an old resourceVersion after expire is 410
        self.fake.ctl(fault="expire")
        old = self.watch("watch=1&resourceVersion=%s" % rv)
        self.assertEqual(old.wait_end(5), "clean")
        self.assertEqual(old.events[0]["object"]["code"], 410)

    def test_faults_and_stats(self):
        self.create(lease("f"))
        self.fake.ctl(fault="reset_stats")
        self.fake.ctl(fault="leases_unavailable", status=503)
        st, body, _ = self.fake.request("POST", LEASES, body=lease("g"))
        self.assertEqual((st, body["reason"]), (503, "ServiceUnavailable"))
        st, _, _ = self.fake.get(LEASES + "/f")
        self.assertEqual(st, 200, "reads still work")
        self.fake.ctl(fault="leases_unavailable", status=403, verbs=["update", "patch"], count=1)
        st, body, _ = self.fake.request("PATCH", LEASES + "/f", body={"spec": {"holderIdentity": "z"}}, headers=MERGE)
        self.assertEqual((st, body["message"]), (403, 'leases.coordination.k8s.io "f" is forbidden: User '
                         '"system:serviceaccount:skewgate:skewgate" cannot patch resource "leases" in API group '
                         '"coordination.k8s.io" in the namespace "openshift-skewgate"'))
        st, _, _ = self.fake.request("PATCH", LEASES + "/f", body={"spec": {"holderIdentity": "z"}}, headers=MERGE)
        self.assertEqual(st, 200, "count 1: only the next one")
        self.fake.ctl(fault="forbid", resource="leases.coordination.k8s.io")
        st, _, _ = self.fake.get(LEASES)
        self.assertEqual(st, 403)
        self.fake.ctl(fault="clear")
        s = self.fake.stats()
        self.assertEqual(s["requestsByResource"]["leases.coordination.k8s.io"],
                         {"create": 1, "get": 1, "patch": 2, "list": 1})
        b = s["bytesByResource"]["leases.coordination.k8s.io"]
        self.assertGreater(b["in"], 100)
        self.assertGreater(b["out"], b["in"])
        self.assertEqual(s["leases"], 1)


if __name__ == "__main__":
    unittest.main(verbosity=2)
