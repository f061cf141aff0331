#!/usr/bin/env bash
# Make a Debian base image for compose/Dockerfile on a machine that reaches no
# container registry, and print its name (pass it as BASE_IMAGE):
#
#     BASE_IMAGE="$(compose/local-base.sh)" docker-compose -f compose/docker-compose.yml up -d --build
#
# The image is debootstrap's minimal Debian (python3, python3-venv, pip,
# ca-certificates) imported with `docker import`. It trusts the extra CA
# certificates this machine trusts (the .crt files update-ca-certificates reads
# from /usr/local/share/ca-certificates), and points PIP_CERT, SSL_CERT_FILE and
# REQUESTS_CA_BUNDLE at the resulting bundle, so pip works behind an
# intercepting HTTPS proxy. An image of that name that already exists is reused.
#
# Needs root, debootstrap and a running Docker engine. Where a registry answers,
# none of this is needed: compose/Dockerfile builds FROM python:3.12-slim.
#
# Environment:
#   LOCAL_BASE_IMAGE  image name (default remote-graph-base:bookworm)
#   DEBIAN_SUITE      Debian release (default bookworm)
#   DEBIAN_MIRROR     Debian mirror (default: the one apt uses here, else deb.debian.org)
set -euo pipefail

image="${LOCAL_BASE_IMAGE:-remote-graph-base:bookworm}"
suite="${DEBIAN_SUITE:-bookworm}"
ca_dir=/usr/local/share/ca-certificates
bundle=/etc/ssl/certs/ca-certificates.crt

say() { echo "local-base.sh: $*" >&2; }

if docker image inspect "$image" >/dev/null 2>&1; then
    say "reusing $image"
    echo "$image"
    exit 0
fi

# The Debian mirror apt is configured with (deb822 .sources or one-line sources.list).
apt_mirror() {
    local f
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -r "$f" ] || continue
        # A stanza's URIs whose Suites name the plain suite (not -security, -updates).
        awk -v suite="$suite" '
            BEGIN { RS = ""; FS = "\n" }
            {
                uris = ""; ok = 0
                for (i = 1; i <= NF; i++) {
                    if ($i ~ /^URIs:/) { uris = $i; sub(/^URIs:[ \t]*/, "", uris) }
                    if ($i ~ /^Suites:/) { n = split($i, s, /[ \t]+/); for (j = 2; j <= n; j++) if (s[j] == suite) ok = 1 }
                }
                if (ok && uris != "") { split(uris, u, /[ \t]+/); print u[1]; exit }
            }' "$f"
    done
    if [ -r /etc/apt/sources.list ]; then
        awk -v suite="$suite" '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { if ($(i + 1) == suite) print $i; break } }' /etc/apt/sources.list
    fi
}

mirror="${DEBIAN_MIRROR:-$(apt_mirror | head -n 1)}"
mirror="${mirror:-http://deb.debian.org/debian}"

rootfs="$(mktemp -d)"
trap 'rm -rf "$rootfs"' EXIT

say "debootstrap $suite from $mirror"
debootstrap --variant=minbase --include=python3,python3-venv,python3-pip,ca-certificates \
    "$suite" "$rootfs" "$mirror" >&2

# This machine's extra CA certificates, trusted inside the image.
shopt -s nullglob globstar
certs=("$ca_dir"/**/*.crt)
if [ "${#certs[@]}" -gt 0 ]; then
    mkdir -p "$rootfs$ca_dir"
    cp "${certs[@]}" "$rootfs$ca_dir/"
    say "trusting ${#certs[@]} extra CA certificate(s)"
fi
chroot "$rootfs" update-ca-certificates >&2

# Smaller image: no package lists or caches.
chroot "$rootfs" apt-get clean
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/tmp/*

tar -C "$rootfs" -c . | docker import \
    --change "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    --change "ENV LANG=C.UTF-8" \
    --change "ENV SSL_CERT_FILE=$bundle" \
    --change "ENV REQUESTS_CA_BUNDLE=$bundle" \
    --change "ENV PIP_CERT=$bundle" \
    --change 'CMD ["/bin/bash"]' \
    - "$image" >&2
say "made $image"
echo "$image"
