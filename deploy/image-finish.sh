#!/bin/sh
# deploy/image-finish.sh ROOT: the steps the skewgate image's root filesystem
# gets once its runtime packages (deploy/image-packages.txt) are installed,
# shared by deploy/Containerfile (ROOT=/, inside the build) and tools/image.sh
# (ROOT=the debootstrap tree), so that both images have the same user and
# the same things stripped:
#   - the user skewgate, UID/GID 65532 (numeric in the image config, so that
#     Kubernetes' runAsNonRoot can verify it), no home, no shell;
#   - /etc/skewgate, root-owned and read-only to that user;
#   - stripped: apt's package lists and caches, documentation (each package's
#     copyright file is kept: it is the licence notice), man and info pages,
#     translations, lintian overrides, logs; and dpkg told not to install them
#     again (as Debian's slim images do). dpkg's database stays, so that image
#     scanners can list the packages.
set -eu
root=${1:?usage: image-finish.sh ROOT}
root=${root%/}
r() { printf '%s%s' "$root" "$1"; }

# The user. --no-log-init: no sparse lastlog/faillog entries for a high UID;
# -K: 65532 is above login.defs' UID_MAX, on purpose (not a login user).
if ! grep -q '^skewgate:' "$(r /etc/group)"; then
  groupadd --root "${root:-/}" -K GID_MAX=65532 --gid 65532 skewgate
fi
if ! grep -q '^skewgate:' "$(r /etc/passwd)"; then
  useradd --root "${root:-/}" -K UID_MAX=65532 -K GID_MAX=65532 --uid 65532 --gid 65532 --no-create-home --no-log-init \
          --home-dir /nonexistent --shell /usr/sbin/nologin --comment skewgate skewgate
fi
install -d -m 0755 -o 0 -g 0 "$(r /etc/skewgate)"

# Not installed again by later apt-get runs in the image.
mkdir -p "$(r /etc/dpkg/dpkg.cfg.d)"
cat >"$(r /etc/dpkg/dpkg.cfg.d/skewgate-image)" <<'EOF'
# skewgate image (deploy/image-finish.sh): no documentation, man pages or
# translations; copyright files stay.
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/lintian/*
EOF

# Strip.
rm -rf "$(r /var/lib/apt/lists)"/* "$(r /var/cache/apt)"/*.bin "$(r /var/cache/apt/archives)"/*.deb \
       "$(r /var/cache/debconf)"/*-old "$(r /var/lib/dpkg)"/*-old
find "$(r /usr/share/doc)" -mindepth 1 \( -type f -o -type l \) ! -name copyright -delete
find "$(r /usr/share/doc)" -mindepth 1 -type d -empty -delete
rm -rf "$(r /usr/share/man)"/* "$(r /usr/share/info)"/* "$(r /usr/share/locale)"/* \
       "$(r /usr/share/lintian)"/* "$(r /usr/share/bug)"
find "$(r /var/log)" -type f \( -name '*.log' -o -path '*/log/apt/*' \) -delete
# /tmp only inside the image's own tree: ROOT=/ is the build's container.
rm -rf "$(r /tmp)"/* "$(r /var/tmp)"/*
