#!/usr/bin/env bash
# tools/image.sh [base|rootfs|image|containerfile]: the skewgate container image, built
# without a registry (no base image is pulled): the same image as
# deploy/Containerfile, from Debian's packages only. As root.
#
#   base    build/image/rootfs-base: `debootstrap --variant=minbase bookworm`,
#           upgraded from bookworm-updates and bookworm-security, with the
#           runtime packages of deploy/image-packages.txt, the user and the
#           stripping of deploy/image-finish.sh. Cached: rebuilt only when
#           the package list, the finish script, the mirrors or this
#           recipe change (the key is in build/image/rootfs-base.key).
#   rootfs  base + the binary (IMAGE_BIN, default build/skewgate) at
#           /usr/local/bin/skewgate + conf/ at /etc/skewgate: OUT/rootfs
#   image   (default) rootfs committed with buildah as an OCI archive:
#           OUT/skewgate.oci.tar, named IMAGE_NAME (localhost/skewgate:latest)
#           `podman load -i build/image/skewgate.oci.tar` brings it in.
#   containerfile  a check of deploy/Containerfile itself, where its base
#           cannot be pulled: `buildah bud --pull=never` against a stand-in
#           for debian:bookworm-slim made of the base (so not the real slim
#           image: the user and the stripping are already there, and the
#           finish script must find them so), the network of this machine
#           for the Containerfile's apt-get: OUT/containerfile.oci.tar.
#           Under a minute with the base cached; not part of make test.
#
# Environment: IMAGE_BIN, IMAGE_NAME, IMAGE_CACHE (where the base is kept,
# default build/image), IMAGE_OUT (rootfs and archive, default IMAGE_CACHE),
# IMAGE_MIRROR and IMAGE_SECURITY_MIRROR (default: the Debian mirrors apt
# uses on this machine, from /etc/apt/sources.list{,.d/*}).
# Exit status: 0 built, 75 the mirror cannot be reached (and no cached base),
# anything else an error.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
step=${1:-image}
case $step in base|rootfs|image|containerfile) ;;
  *) echo "usage: tools/image.sh [base|rootfs|image|containerfile]" >&2; exit 2 ;; esac

SUITE=bookworm
RECIPE=1                       # bump when the base recipe below changes
PKGS_FILE=$ROOT/deploy/image-packages.txt
FINISH=$ROOT/deploy/image-finish.sh
BIN=${IMAGE_BIN:-$ROOT/build/skewgate}
NAME=${IMAGE_NAME:-localhost/skewgate:latest}
CACHE=${IMAGE_CACHE:-$ROOT/build/image}
OUT=${IMAGE_OUT:-$CACHE}
BASE=$CACHE/rootfs-base
ROOTFS=$OUT/rootfs
ARCHIVE=$OUT/skewgate.oci.tar
# The image's config: deploy/Containerfile says the same (t_image.sh checks).
UID_GID=65532:65532
ENTRYPOINT='["/usr/local/bin/skewgate"]'
CMD='["run","-c","/etc/skewgate/skewgate.yaml"]'

t0=$(date +%s)
log() { printf 'image: [%3ss] %s\n' "$(( $(date +%s) - t0 ))" "$*" >&2; }
die() { printf 'image: %s\n' "$*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "must run as root (debootstrap, chroot, buildah)"
for tool in debootstrap buildah chroot flock; do
  command -v "$tool" >/dev/null || die "$tool is missing: run 'make deps' (tools/deps.sh)"
done

# bounded SECS COMMAND...: COMMAND under timeout(1), which gives it a process
# group of its own; a TERM/INT/HUP that stops this script (the test runner's
# timeout, Ctrl-C) stops that whole group too, not only this shell.
CHILD=
bounded() {
  timeout "$@" &
  CHILD=$!
  local rc=0
  wait "$CHILD" || rc=$?
  CHILD=
  return "$rc"
}
on_signal() {
  [ -z "$CHILD" ] || kill -TERM -- "-$CHILD" 2>/dev/null || kill -TERM "$CHILD" 2>/dev/null || true
  [ -z "$CHILD" ] || wait "$CHILD" 2>/dev/null || true
  exit 143
}
trap on_signal TERM INT HUP

# scrub DIR: remove a tree that an interrupted run may have left, unmounting
# first whatever is mounted under it (debootstrap mounts proc and sys).
scrub() {
  local d=$1 m
  [ -e "$d" ] || return 0
  while read -r m; do umount -l "$m" 2>/dev/null || true; done \
    < <(findmnt -rn -o TARGET | awk -v d="$(realpath "$d")" 'index($0, d "/") == 1 || $0 == d' | sort -r)
  rm -rf --one-file-system "$d"
}

# apt_uri SUITE DEFAULT: the first enabled "deb" URI apt uses for SUITE.
apt_uri() {
  python3 - "$1" "$2" <<'PY'
import glob, re, sys
suite, default = sys.argv[1], sys.argv[2]
files = glob.glob("/etc/apt/sources.list") + sorted(glob.glob("/etc/apt/sources.list.d/*.list")) \
      + sorted(glob.glob("/etc/apt/sources.list.d/*.sources"))
for f in files:
    try:
        text = open(f).read()
    except OSError:
        continue
    if f.endswith(".sources"):
        for stanza in re.split(r"\n\s*\n", text):
            fields, key = {}, None
            for line in stanza.splitlines():
                if line.startswith("#") or not line.strip():
                    continue
                if line[0] in " \t" and key:
                    fields[key] += " " + line.strip()
                elif ":" in line:
                    key, _, value = line.partition(":")
                    key = key.strip().lower()
                    fields[key] = value.strip()
            if fields.get("enabled", "yes").lower() == "no" or "deb" not in fields.get("types", "").split():
                continue
            if suite in fields.get("suites", "").split() and fields.get("uris"):
                print(fields["uris"].split()[0].rstrip("/")); sys.exit()
    else:
        for line in text.splitlines():
            words = re.sub(r"\[[^]]*\]", "", line.split("#")[0]).split()
            if len(words) >= 3 and words[0] == "deb" and words[2] == suite:
                print(words[1].rstrip("/")); sys.exit()
print(default)
PY
}

packages() { sed -e 's/#.*//' "$PKGS_FILE" | xargs; }

build_base() {
  local mirror secmirror key tmp
  mirror=${IMAGE_MIRROR:-$(apt_uri "$SUITE" http://deb.debian.org/debian)}
  secmirror=${IMAGE_SECURITY_MIRROR:-$(apt_uri "$SUITE-security" http://deb.debian.org/debian-security)}
  key=$(printf '%s\n' "recipe $RECIPE" "$SUITE" "$mirror" "$secmirror" "$(packages)" \
          "$(sha256sum <"$FINISH")" | sha256sum | cut -d' ' -f1)
  mkdir -p "$CACHE"
  exec 9>"$CACHE/.lock"
  flock -w 900 9 || die "another tools/image.sh holds $CACHE/.lock"
  if [ -d "$BASE" ] && [ "$(cat "$BASE.key" 2>/dev/null)" = "$key" ]; then
    log "base: cached $BASE ($(du -sm "$BASE" | cut -f1) MiB)"
    return 0
  fi
  local reach
  if ! reach=$(curl -fsS --max-time 20 -o /dev/null "$mirror/dists/$SUITE/InRelease" 2>&1); then
    printf 'image: cannot reach the Debian mirror %s: %s\n' "$mirror" "$reach" >&2
    exit 75
  fi
  tmp=$BASE.tmp
  scrub "$tmp"
  log "base: debootstrap --variant=minbase $SUITE from $mirror (log: $CACHE/debootstrap.log)"
  if ! bounded 600 debootstrap --variant=minbase --components=main "$SUITE" "$tmp" "$mirror" \
         >"$CACHE/debootstrap.log" 2>&1; then
    tail -20 "$CACHE/debootstrap.log" >&2
    scrub "$tmp"
    die "debootstrap failed"
  fi
  # What the image's apt would use: the main archive, its updates, security.
  rm -f "$tmp/etc/apt/sources.list"
  cat >"$tmp/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $mirror
Suites: $SUITE $SUITE-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $secmirror
Suites: $SUITE-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  cp -L /etc/resolv.conf "$tmp/etc/resolv.conf"
  printf '#!/bin/sh\nexit 101\n' >"$tmp/usr/sbin/policy-rc.d"   # no daemon starts in the chroot
  chmod 755 "$tmp/usr/sbin/policy-rc.d"
  log "base: apt-get upgrade, install $(packages)"
  local in_root=(bounded 300 chroot "$tmp" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin
                 DEBIAN_FRONTEND=noninteractive LC_ALL=C)
  local pkgs
  read -ra pkgs <<<"$(packages)"
  if ! { "${in_root[@]}" apt-get update -qq &&
         "${in_root[@]}" apt-get upgrade -y -qq &&
         "${in_root[@]}" apt-get install -y -qq --no-install-recommends "${pkgs[@]}" &&
         "${in_root[@]}" apt-get clean; } >"$CACHE/apt.log" 2>&1; then
    tail -20 "$CACHE/apt.log" >&2
    scrub "$tmp"
    die "apt-get in the root filesystem failed"
  fi
  sh "$FINISH" "$tmp"
  # debootstrap's copies of this machine's files: the runtime provides its own.
  rm -f "$tmp/usr/sbin/policy-rc.d" "$tmp/etc/resolv.conf" "$tmp/etc/hostname"
  chroot "$tmp" dpkg-query -W -f='${Package} ${Version}\n' >"$CACHE/rootfs-base.packages"
  scrub "$BASE"
  rm -f "$BASE.key"
  mv "$tmp" "$BASE"
  printf '%s\n' "$key" >"$BASE.key"
  log "base: built $BASE ($(du -sm "$BASE" | cut -f1) MiB, $(wc -l <"$CACHE/rootfs-base.packages") packages)"
}

build_rootfs() {
  [ -x "$BIN" ] || die "no binary $BIN: run make"
  if ldd "$BIN" | grep -qE 'lib(a|t|ub|l)san'; then
    die "$BIN is a sanitizer build: the image ships the optimised build (make)"
  fi
  mkdir -p "$OUT"
  scrub "$ROOTFS"
  cp -a "$BASE" "$ROOTFS"
  install -m 0755 -o 0 -g 0 "$BIN" "$ROOTFS/usr/local/bin/skewgate"
  cp -R "$ROOT/conf/." "$ROOTFS/etc/skewgate/"
  chown -R 0:0 "$ROOTFS/etc/skewgate"
  chmod -R u=rwX,go=rX "$ROOTFS/etc/skewgate"
  log "rootfs: $ROOTFS ($(du -sm "$ROOTFS" | cut -f1) MiB)"
}

build_image() {
  local store=$OUT/storage ctr mnt revision version created
  local B=(buildah --root "$store/root" --runroot "$store/run" --storage-driver vfs)
  revision=$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)
  version=$(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo dev)
  created=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  scrub "$store"
  ctr=$("${B[@]}" from --name "skewgate-image-$$" scratch)
  mnt=$("${B[@]}" mount "$ctr")
  # /dev stays empty: the runtime provides it.
  tar -C "$ROOTFS" --exclude='./dev/*' -cf - . | tar -C "$mnt" --numeric-owner -xpf -
  "${B[@]}" umount "$ctr" >/dev/null
  "${B[@]}" config --user "$UID_GID" --workingdir / \
    --entrypoint "$ENTRYPOINT" --cmd "$CMD" \
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --port 22643/tcp --port 22644/tcp --stop-signal SIGTERM \
    --created-by "tools/image.sh: debootstrap --variant=minbase $SUITE, deploy/image-packages.txt, deploy/image-finish.sh, build/skewgate, conf/" \
    --label org.opencontainers.image.title=skewgate \
    --label "org.opencontainers.image.description=Boot image skew gate in front of OpenShift's Machine Config Server" \
    --label "org.opencontainers.image.revision=$revision" \
    --label "org.opencontainers.image.version=$version" \
    --label "org.opencontainers.image.created=$created" \
    "$ctr"
  rm -f "$ARCHIVE.tmp"
  "${B[@]}" commit --quiet --rm --format oci --disable-compression=false \
    "$ctr" "oci-archive:$ARCHIVE.tmp:$NAME" >/dev/null
  mv "$ARCHIVE.tmp" "$ARCHIVE"
  scrub "$store"
  log "image: $ARCHIVE ($NAME, $(du -m "$ARCHIVE" | cut -f1) MiB compressed); load it with: podman load -i $ARCHIVE"
}

build_containerfile() {
  local store=$OUT/storage-containerfile ctr mnt out=$OUT/containerfile.oci.tar
  local B=(buildah --root "$store/root" --runroot "$store/run" --storage-driver vfs)
  scrub "$store"
  ctr=$("${B[@]}" from --name "skewgate-standin-$$" scratch)
  mnt=$("${B[@]}" mount "$ctr")
  tar -C "$BASE" --exclude='./dev/*' -cf - . | tar -C "$mnt" --numeric-owner -xpf -
  "${B[@]}" umount "$ctr" >/dev/null
  "${B[@]}" config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --cmd bash "$ctr"
  "${B[@]}" commit --quiet --rm "$ctr" docker.io/library/debian:bookworm-slim >/dev/null
  log "containerfile: buildah bud -f deploy/Containerfile (log: $OUT/containerfile.log)"
  if ! bounded 900 "${B[@]}" bud --pull=never --isolation chroot --network host \
         --ulimit "nofile=$(ulimit -Hn):$(ulimit -Hn)" \
         --build-arg REVISION="$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)" \
         -f deploy/Containerfile -t localhost/skewgate:containerfile "$ROOT" >"$OUT/containerfile.log" 2>&1; then
    tail -20 "$OUT/containerfile.log" >&2
    scrub "$store"
    die "the Containerfile did not build"
  fi
  rm -f "$out"
  "${B[@]}" push --quiet localhost/skewgate:containerfile "oci-archive:$out:$NAME" >/dev/null
  scrub "$store"
  log "containerfile: built; $out"
}

build_base
[ "$step" = base ] && exit 0
if [ "$step" = containerfile ]; then mkdir -p "$OUT"; build_containerfile; exit 0; fi
build_rootfs
[ "$step" = rootfs ] && exit 0
build_image
