#!/usr/bin/env bash
# Installs the Debian packages skewgate needs to build, test and run its demo,
# but only those that are missing, so that it is cheap to call on every build.
set -euo pipefail
pkgs=(build-essential pkg-config libevent-dev libssl-dev libjansson-dev libyaml-dev
      libcriterion-dev nginx-light curl openssl ignition python3 python3-yaml procps
      prometheus libnftables-dev nftables iproute2 systemd
      haproxy     # t_proxy_protocol: a real load balancer sending PROXY v2 (and bench/run)
      wrk)        # t_reload: load while the gate reloads (and bench/run)
# bench/run (make bench, make bench-smoke in CI): its plots.
pkgs+=(gnuplot-nox)
# The container image (tools/image.sh, tests/integration/t_image.sh): debootstrap
# builds its root filesystem, buildah commits it, podman runs it (with runc:
# crun refuses a hybrid cgroup layout).
pkgs+=(debootstrap buildah podman runc)
# The status page test (tests/integration/t_status_page.sh): headless Chromium.
pkgs+=(chromium)
# make fuzz (tests/fuzz/run.sh): clang and its libFuzzer runtime.
pkgs+=(clang libclang-rt-14-dev)
# make soak (tests/soak/run.sh): the memcheck pass. prlimit (util-linux) for t_fault_process.
pkgs+=(valgrind util-linux)
# kubectl is not installed here: Debian 12 has no package of it that the
# tests can use (kubernetes-client is 1.20, whose kustomize cannot render
# components). The tests that need one check for it themselves and are
# skipped without it (tests/integration/lib.sh: need_kubectl; docs/testing.md
# names them).
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "deps: missing packages: ${missing[*]} (run 'make deps' as root, or apt-get install them)" >&2
  exit 1
fi
echo "deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
