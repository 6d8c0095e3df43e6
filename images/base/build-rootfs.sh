#!/usr/bin/env bash
# Build the base image's root filesystem from Debian's packages and pack it as a tarball
# for `docker import`. Called by orchestrator/images/base.py; the hash of this file is part of
# the base image's tag, so any change here rebuilds the base.
#
#   build-rootfs.sh SUITE MIRROR PACKAGES(comma list) OUT.tar
#
# Needs root and debootstrap. Writes OUT.tar only when everything succeeded.
set -euo pipefail

suite=$1 mirror=$2 packages=$3 out=$4
work=$(mktemp -d "${TMPDIR:-/tmp}/pb-rootfs.XXXXXX")
root=$work/root

cleanup() {
  # debootstrap mounts /proc and /sys inside the target while it runs; a failure can leave
  # them mounted, and removing the tree through a live /proc mount would be a disaster.
  for m in proc sys dev/pts dev; do
    if mountpoint -q "$root/$m" 2>/dev/null; then umount -l "$root/$m" || true; fi
  done
  rm -rf --one-file-system "$work"
  rm -f "$out.partial"
}
trap cleanup EXIT

debootstrap --variant=minbase --include="$packages" "$suite" "$root" "$mirror"

# Trim what a container never needs: package caches and lists (the image has no network),
# documentation, manuals and translations. C.UTF-8 needs no locale files.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/cache/apt/*.bin \
       "$root"/var/lib/apt/lists/* \
       "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* \
       "$root"/usr/share/locale/* \
       "$root"/var/log/*.log "$root"/var/log/apt/* \
       "$root"/var/cache/debconf/*-old "$root"/var/lib/dpkg/*-old \
       "$root"/tmp/* "$root"/root/.bash_history
# Identity files a container runtime provides itself; an empty machine-id keeps images
# from sharing one.
: > "$root/etc/machine-id"
rm -f "$root/etc/hostname" "$root/etc/resolv.conf"
printf 'localhost\n' > "$root/etc/hostname"

# Deterministic member order and numeric owners; one filesystem only.
tar --numeric-owner --one-file-system --sort=name -C "$root" -cf "$out.partial" .
mv "$out.partial" "$out"
