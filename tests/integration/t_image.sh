#!/usr/bin/env bash
# The container image (tools/image.sh, deploy/Containerfile): its root
# filesystem is complete (the binary runs inside it, as the image's non-root
# user, every library found, the shipped configs pass check), stripped, and
# the OCI archive carries the config the Containerfile declares. Then, when
# a container runtime works here, the archive runs under podman: --help,
# check, the gate itself on a read-only root with no capabilities, and
# `redirect` with CAP_NET_ADMIN alone in the container's network namespace.
#
# The debootstrap base is cached in build/image (tools/image.sh base); a
# fresh one takes about a minute, which t_image_base.sh spends beside the
# parallel tests (run on its own, this test builds the base itself). The
# test is skipped only when the Debian mirror cannot be reached to build
# it, and never in CI.
# It runs beside the others: tools/image.sh takes build/image/.lock, so
# it waits for t_image_base's base when that is still being built.
. "$(dirname "$0")/lib.sh"
elapsed() { echo "$(( $(date +%s) - T0 ))s"; }
T0=$(date +%s)

if ldd "$SKEWGATE_BIN" | has -E 'lib(a|t|ub|l)san'; then
  skip "$SKEWGATE_BIN is a sanitizer build; the image ships the optimised build, checked by the plain make test"
fi
for tool in debootstrap buildah; do
  command -v "$tool" >/dev/null || fail "$tool is missing: run 'make deps' (tools/deps.sh)"
done

# --- build: the cached base, then this binary's rootfs and archive in $TMP.
OUT=$TMP/image
note "tools/image.sh image (the debootstrap base is kept in build/image: built once, then reused)"
set +e
IMAGE_BIN=$SKEWGATE_BIN IMAGE_OUT=$OUT timeout 240 "$ROOT/tools/image.sh" image 2>&1
rc=$?
set -e
case $rc in
  0) ;;
  75) [ "${CI:-}" = true ] && fail "CI: the Debian mirror must be reachable to build the image"
      skip "debootstrap cannot reach the Debian mirror (above)" ;;
  124) fail "tools/image.sh took over 240 s" ;;
  *) fail "tools/image.sh exited $rc" ;;
esac
note "built in $(elapsed)"
R=$OUT/rootfs
A=$OUT/skewgate.oci.tar
[ -x "$R/usr/local/bin/skewgate" ] || fail "no /usr/local/bin/skewgate in the rootfs"
cmp -s "$SKEWGATE_BIN" "$R/usr/local/bin/skewgate" || fail "the rootfs binary is not $SKEWGATE_BIN"

# --- the rootfs runs the binary.
in_root() { timeout 30 chroot "$R" env -i PATH=/usr/local/bin:/usr/bin:/bin "$@"; }
as_user() { timeout 30 chroot --userspec=65532:65532 "$R" env -i PATH=/usr/local/bin:/usr/bin:/bin "$@"; }
in_root skewgate --help | has "usage: skewgate" || fail "chroot skewgate --help"
out=$(in_root skewgate check -c /etc/skewgate/skewgate.yaml) || fail "chroot check of the shipped config: $out"
[ "$(head -1 <<<"$out")" = "/etc/skewgate/skewgate.yaml: ok" ] || fail "chroot check: $out"
for f in "$R"/etc/skewgate/examples/*.yaml; do
  in_root skewgate check -c "/etc/skewgate/examples/${f##*/}" >/dev/null || fail "chroot check of examples/${f##*/}"
done
cmp -s "$ROOT/conf/skewgate.yaml" "$R/etc/skewgate/skewgate.yaml" || fail "/etc/skewgate/skewgate.yaml is not conf/skewgate.yaml"

# Every library, inside: ldd from the rootfs's own loader and search path.
libs=$(in_root ldd /usr/local/bin/skewgate) || fail "chroot ldd: $libs"
if grep -q "not found" <<<"$libs"; then fail "libraries missing from the rootfs: $(grep 'not found' <<<"$libs")"; fi
note "libraries: $(awk '/=>/ {print $1}' <<<"$libs" | xargs)"
# Each runtime package is installed, and its own libraries resolve too (so
# libnftables1 is ready before the binary links it).
for p in $(sed -e 's/#.*//' "$ROOT/deploy/image-packages.txt"); do
  st=$(in_root dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [ "$st" = "install ok installed" ] || fail "runtime package $p not installed in the rootfs ($st)"
  for so in $(in_root dpkg -L "$p" | grep -E '\.so\.[0-9.]+$'); do
    out=$(in_root ldd "$so") || fail "chroot ldd $so: $out"
    if grep -q "not found" <<<"$out"; then fail "$so ($p) lacks: $(grep 'not found' <<<"$out")"; fi
  done
done

# The non-root user: numeric 65532, no shell, cannot write its config.
[ "$(in_root id -u skewgate):$(in_root id -g skewgate)" = 65532:65532 ] || fail "user skewgate is not 65532:65532"
grep -q '^skewgate:x:65532:65532:.*:/nonexistent:/usr/sbin/nologin$' "$R/etc/passwd" || fail "passwd: $(grep skewgate "$R/etc/passwd")"
as_user skewgate --help | has "usage: skewgate" || fail "skewgate --help as 65532"
as_user skewgate check -c /etc/skewgate/skewgate.yaml >/dev/null || fail "check as 65532 (config unreadable?)"
[ "$(as_user id -u)" = 65532 ] || fail "--userspec did not take"
as_user sh -c '! [ -w /etc/skewgate ] && ! [ -w /etc/skewgate/skewgate.yaml ] && ! [ -w /usr/local/bin/skewgate ]' \
  || fail "the user can write its config or binary"

# Stripped, and nothing of this machine left behind.
[ -z "$(ls -A "$R/var/lib/apt/lists")" ] || fail "apt lists left in the rootfs"
[ -z "$(find "$R/var/cache/apt" -name '*.deb' -o -name '*.bin')" ] || fail "apt caches left"
[ -z "$(find "$R/usr/share/doc" -type f ! -name copyright)" ] || fail "documentation left: $(find "$R/usr/share/doc" -type f ! -name copyright | head -3)"
[ -n "$(find "$R/usr/share/doc" -name copyright)" ] || fail "copyright files were stripped too"
[ -z "$(ls -A "$R/usr/share/man" 2>/dev/null)" ] || fail "man pages left"
for f in /etc/resolv.conf /etc/hostname /usr/sbin/policy-rc.d; do
  [ ! -e "$R$f" ] || fail "$f left in the rootfs"
done
size=$(du -sm "$R" | cut -f1)
note "rootfs: ${size} MiB; archive: $(du -m "$A" | cut -f1) MiB; checked ($(elapsed))"
[ "$size" -lt 150 ] || fail "the rootfs grew to $size MiB (recommends? docs?)"

# --- the archive: OCI layout, one layer with the binary and config, and the
# config the Containerfile declares (same packages file, same finish script).
grep -qx oci-layout <<<"$(tar -tf "$A")" || fail "$A is not an OCI layout"   # not a pipe: grep -q would cut tar off (pipefail)
python3 - "$A" "$ROOT/deploy/Containerfile" "$ROOT/tools/deps.sh" "$ROOT/conf/skewgate.yaml" <<'PY' || fail "image config"
import json, re, sys, tarfile
archive, containerfile, deps, conf = sys.argv[1:5]
t = tarfile.open(archive)
blob = lambda d: t.extractfile("blobs/sha256/" + d.split(":", 1)[1])
index = json.load(t.extractfile("index.json"))
man = index["manifests"][0]
assert man["annotations"]["org.opencontainers.image.ref.name"] == "localhost/skewgate:latest", man
manifest = json.load(blob(man["digest"]))
config = json.load(blob(manifest["config"]["digest"]))
cfg = config["config"]
assert len(manifest["layers"]) == 1, manifest["layers"]
names = set(tarfile.open(fileobj=blob(manifest["layers"][0]["digest"]), mode="r|gz").getnames())
for f in ("usr/local/bin/skewgate", "etc/skewgate/skewgate.yaml", "etc/passwd"):
    assert f in names or "./" + f in names, "layer lacks " + f
assert not [n for n in names if re.match(r"(\./)?dev/.", n)], "device nodes in the layer"
print("image config:", json.dumps({k: cfg.get(k) for k in ("User", "Entrypoint", "Cmd", "WorkingDir")}))

# The Containerfile declares the same.
text = open(containerfile).read()
inst = {}
for line in re.sub(r"\\\n", " ", text).splitlines():
    m = re.match(r"^([A-Z]+)\s+(.*)$", line)
    if m:
        inst.setdefault(m.group(1), []).append(m.group(2).strip())
assert inst["USER"][-1] == cfg["User"] == "65532:65532", (inst["USER"], cfg["User"])
assert json.loads(inst["ENTRYPOINT"][-1]) == cfg["Entrypoint"], (inst["ENTRYPOINT"], cfg["Entrypoint"])
assert json.loads(inst["CMD"][-1]) == cfg["Cmd"], (inst["CMD"], cfg["Cmd"])
assert inst["WORKDIR"][-1] == cfg["WorkingDir"], (inst["WORKDIR"], cfg["WorkingDir"])
assert set(inst["EXPOSE"][-1].split()) == set(cfg["ExposedPorts"]), (inst["EXPOSE"], cfg["ExposedPorts"])
# ... and those ports are the shipped config's listeners.
import yaml
shipped = yaml.safe_load(open(conf))
ports = {l["address"].rsplit(":", 1)[1] + "/tcp" for l in shipped["listeners"]}
assert ports == set(cfg["ExposedPorts"]), ("EXPOSE", sorted(cfg["ExposedPorts"]), "listeners", sorted(ports))
assert inst["STOPSIGNAL"][-1] == cfg["StopSignal"], inst["STOPSIGNAL"]
for label in ("org.opencontainers.image.title", "org.opencontainers.image.revision"):
    assert label in cfg["Labels"] and label in text, label
assert any("deploy/image-packages.txt" in c and "image-finish.sh" in c for c in inst["COPY"]), inst["COPY"]
assert "image-finish.sh /" in text and "--no-install-recommends" in text
assert "COPY --from=build /src/build/skewgate /usr/local/bin/skewgate" in text
assert "COPY conf/ /etc/skewgate/" in text
assert re.search(r"^ARG DEBIAN=\S*debian:(12|bookworm)", text, re.M), "the Containerfile is not on Debian 12"
# Its build stage installs every build package of tools/deps.sh (the
# -dev ones, less the test-only ones: Criterion, the libFuzzer runtime).
build = text.split("FROM ${DEBIAN} AS build", 1)[1].split("\nFROM ", 1)[0]
need = {"build-essential", "pkg-config"} | set(re.findall(r"\b(lib[a-z0-9.+-]+-dev)\b", open(deps).read()))
test_only = {"libcriterion-dev", "libclang-rt-14-dev"}
missing = sorted(p for p in need - test_only if not re.search(r"\b" + re.escape(p) + r"\b", build))
assert not missing, "deploy/Containerfile's build stage lacks " + " ".join(missing)
PY

# --- podman, if a container runtime works here. As root in this sandbox it
# needs: runc (crun refuses this machine's hybrid cgroup layout); ulimits
# within the hard limits (podman's defaults for root raise them, and the
# sandbox has no CAP_SYS_RESOURCE); no network. Its storage is private to
# the test: overlay (a run takes 0.3 s; vfs copies the image each run, 4 s),
# vfs where overlay cannot mount.
if ! command -v podman >/dev/null; then
  note "SKIP podman: not installed"
  echo PASS; exit 0
fi
P=$TMP/podman
podman_with() {
  PODMAN=(podman --root "$P/$1/root" --runroot "$P/$1/run" --tmpdir "$P/$1/tmp" --storage-driver "$1"
          --cgroup-manager cgroupfs --events-backend file)
  if command -v runc >/dev/null; then PODMAN+=(--runtime runc); fi
}
nofile=$(ulimit -Hn); [ "$nofile" = unlimited ] || [ "$nofile" -gt 65536 ] && nofile=65536
RUN=(--network none --ulimit "nofile=$nofile:$nofile" --ulimit nproc=4096:4096)
CID=
pod() { timeout 60 "${PODMAN[@]}" "$@"; }
image_cleanup() {
  local rc=$? m
  [ -z "$CID" ] || pod rm -f -t 0 "$CID" >/dev/null 2>&1 || true
  [ -z "${PODMAN:-}" ] || pod rmi -a -f >/dev/null 2>&1 || true
  while read -r m; do umount -l "$m" 2>/dev/null || true; done \
    < <(findmnt -rn -o TARGET | awk -v d="$TMP/" 'index($0, d) == 1' | sort -r)
  (exit "$rc"); cleanup
}
trap image_cleanup EXIT

note "podman load -i $A"
podman_with overlay
if ! loaded=$(pod load -i "$A" 2>&1); then
  note "podman with overlay storage: $loaded; with vfs"
  podman_with vfs
  loaded=$(pod load -i "$A" 2>&1) || fail "podman load: $loaded"
fi
grep -q "localhost/skewgate:latest" <<<"$loaded" || fail "podman load: $loaded"
if ! probe=$(pod run --rm "${RUN[@]}" --entrypoint /bin/true localhost/skewgate:latest 2>&1); then
  note "SKIP podman run: no container runtime works here: $probe"
  echo PASS; exit 0
fi
note "podman run works (${PODMAN[*]:1} run ${RUN[*]})"
pod run --rm "${RUN[@]}" localhost/skewgate:latest --help | has "usage: skewgate" || fail "podman run --help"
out=$(pod run --rm "${RUN[@]}" localhost/skewgate:latest check -c /etc/skewgate/skewgate.yaml) || fail "podman run check: $out"
[ "$(head -1 <<<"$out")" = "/etc/skewgate/skewgate.yaml: ok" ] || fail "podman run check: $out"
[ "$(pod run --rm "${RUN[@]}" --entrypoint id localhost/skewgate:latest -u)" = 65532 ] || fail "the container does not run as 65532"
# The default command needs the MCS certificate: without it, it says so.
if out=$(pod run --rm "${RUN[@]}" localhost/skewgate:latest 2>&1); then fail "the default command ran without a certificate"; fi
grep -q "/etc/ssl/mcs/tls.crt" <<<"$out" || fail "default command: $out"

# The gate itself, as Kubernetes runs it: read-only root, no capabilities.
CID=$(pod run -d "${RUN[@]}" --read-only --cap-drop all --security-opt no-new-privileges \
        localhost/skewgate:latest run -c /etc/skewgate/examples/file-source.yaml)
gate_answers() {
  local rc=0
  STATUS=$(pod exec "$CID" skewgate status -o json --admin 127.0.0.1:22625 2>&1) || rc=$?
  [ "$rc" = 3 ]
}
wait_until 20 gate_answers || fail "the gate in the container did not answer: $STATUS; logs: $(pod logs "$CID" 2>&1 | tail -5)"
grep -q '"reason": "OutOfSkew"' <<<"$STATUS" || fail "status in the container: $STATUS"
grep -q '"event":"listening"' <<<"$(pod logs "$CID" 2>&1)" || fail "no listening event in the container's log"
pod stop -t 20 "$CID" >/dev/null
[ "$(pod inspect -f '{{.State.ExitCode}}' "$CID")" = 0 ] || fail "the gate exited $(pod inspect -f '{{.State.ExitCode}}' "$CID") on SIGTERM"

# The redirect as an init container runs it: the image's user with only
# CAP_NET_ADMIN, here in the container's own network namespace (--network
# none), so this machine's ruleset is not touched. Without it, it is refused.
out=$(pod run --rm "${RUN[@]}" --read-only --cap-drop all --cap-add NET_ADMIN --entrypoint sh \
        localhost/skewgate:latest -c 'skewgate redirect install && skewgate redirect status &&
          skewgate redirect remove && ! skewgate redirect status' 2>&1) || fail "redirect in the container: $out"
grep -q "installed as the configuration says" <<<"$out" || fail "redirect status in the container: $out"
if out=$(pod run --rm "${RUN[@]}" --cap-drop all localhost/skewgate:latest redirect install 2>&1); then
  fail "redirect install without CAP_NET_ADMIN succeeded: $out"
fi
grep -q CAP_NET_ADMIN <<<"$out" || fail "redirect without the capability: $out"
note "podman: --help, check, uid 65532, the gate on a read-only root answered and drained, redirect with CAP_NET_ADMIN only ($(elapsed))"
echo PASS
