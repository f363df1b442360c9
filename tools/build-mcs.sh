#!/usr/bin/env bash
# Builds the real Machine Config Server for the real-MCS tier (make e2e-mcs)
# from an openshift/machine-config-operator source tree, offline:
#   tools/build-mcs.sh MCO_SRC OUT_BINARY
# With its vendor/ directory and GOPROXY=off nothing is downloaded; the
# build cache sits next to the binary, so a second build takes seconds
# (the first about 3 minutes on two cores). release-4.13 (go 1.18 in its
# go.mod) builds with Debian's golang-1.19-go, which this installs when
# missing: it is needed by this tier only, so tools/deps.sh does not carry
# its ~300 MB for every build. A later release needs a newer Go: GO=path.
set -euo pipefail
src=${1:?usage: build-mcs.sh MCO_SRC OUT_BINARY}
out=${2:?usage: build-mcs.sh MCO_SRC OUT_BINARY}
[ -f "$src/cmd/machine-config-server/main.go" ] && [ -d "$src/vendor" ] ||
  { echo "build-mcs: $src is not a machine-config-operator source tree with vendor/ (MCO_SRC)" >&2; exit 1; }
go=${GO:-/usr/lib/go-1.19/bin/go}
if [ ! -x "$go" ] && [ -z "${GO:-}" ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "build-mcs: Go 1.19 is missing (apt-get install golang-1.19-go as root, or set GO)" >&2; exit 1
  fi
  echo "build-mcs: installing golang-1.19-go" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends golang-1.19-go >/dev/null
fi
mkdir -p "$(dirname "$out")"
cache=$(cd "$(dirname "$out")" && pwd)/gocache
echo "build-mcs: $("$go" version) building $src/cmd/machine-config-server" >&2
(cd "$src" && GOFLAGS=-mod=vendor GOPROXY=off GOCACHE="$cache" GOPATH="$cache/gopath" \
  nice -n 5 "$go" build -o "$out" ./cmd/machine-config-server)
