#!/usr/bin/env bash
# The container image's base (tools/image.sh base): `debootstrap --variant=
# minbase bookworm` upgraded, with deploy/image-packages.txt installed and
# deploy/image-finish.sh applied, cached in build/image. t_image.sh builds
# the image on it, alone; built here first, beside the parallel tests, the
# base's minute of download and unpacking (from a fresh clone) is not part
# of the alone phase. Cached (the key matches), this takes a second.
# Skipped as t_image is: under a sanitizer build, and when the Debian mirror
# cannot be reached (never in CI).
# run: background: debootstrap and apt-get in a chroot: mostly waiting on the mirror and the disk
. "$(dirname "$0")/lib.sh"

if ldd "$SKEWGATE_BIN" | has -E 'lib(a|t|ub|l)san'; then
  skip "$SKEWGATE_BIN is a sanitizer build; t_image skips there too"
fi
for tool in debootstrap buildah; do
  command -v "$tool" >/dev/null || fail "$tool is missing: run 'make deps' (tools/deps.sh)"
done

CACHE=$ROOT/build/image
T0=$(date +%s)
set +e
timeout 240 "$ROOT/tools/image.sh" base 2>&1
rc=$?
set -e
case $rc in
  0) ;;
  75) [ "${CI:-}" = true ] && fail "CI: the Debian mirror must be reachable to build the image's base"
      skip "debootstrap cannot reach the Debian mirror (above)" ;;
  124) fail "tools/image.sh base took over 240 s" ;;
  *) fail "tools/image.sh base exited $rc" ;;
esac
[ -s "$CACHE/rootfs-base.key" ] || fail "no $CACHE/rootfs-base.key after tools/image.sh base"
[ -x "$CACHE/rootfs-base/usr/bin/dpkg" ] || fail "$CACHE/rootfs-base has no dpkg: not a Debian root"
note "base ready in $(( $(date +%s) - T0 ))s: $(du -sm "$CACHE/rootfs-base" | cut -f1) MiB"
echo PASS
