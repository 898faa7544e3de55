#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# halo-doctor inside a real mount namespace laid out like a toolbox container (issue 19): an
# image /etc bind-mounted over /etc, the host's tree at /run/host, the toolbox and podman markers
# (containers/toolbox src/cmd/create.go; podman-run(1)). The live binary on the live root must read
# the host's modprobe.d through /run/host, never the image's; the same layout as a docker
# container without /run/host must skip host-configuration facts with the reason.
# Usage: container_ns.sh HALO_DOCTOR. Exit 77 (skipped) where unshare --mount is not permitted.
set -euo pipefail
bin=$(realpath "$1")
if ! unshare --mount true 2>/dev/null; then
  echo "SKIP: unshare --mount is not permitted here"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/image/etc/modprobe.d" "$work/host/etc/modprobe.d" "$work/run"
printf 'NAME="Fedora Linux"\nID=fedora\nVERSION_ID=43\nPRETTY_NAME="Fedora Linux 43 (Toolbx Container Image)"\n' \
  >"$work/image/etc/os-release"
printf 'options ttm pages_limit=1\n' >"$work/image/etc/modprobe.d/image.conf"
printf 'NAME="Fedora Linux"\nID=fedora\nVERSION_ID=43\nPRETTY_NAME="Fedora Linux 43 (Workstation Edition)"\n' \
  >"$work/host/etc/os-release"
printf 'options ttm pages_limit=31457280 page_pool_size=31457280\n' >"$work/host/etc/modprobe.d/ttm.conf"

# $1: "toolbox" or "docker". Runs `facts --format json` inside the namespace.
run_in() {
  # shellcheck disable=SC2016 # expanded by the inner shell
  unshare --mount sh -ec '
    work=$1; kind=$2; bin=$3
    mount --make-rprivate /
    mount -t tmpfs tmpfs /run
    mount --bind "$work/image/etc" /etc
    if [ "$kind" = toolbox ]; then
      mkdir -p /run/host && mount --bind "$work/host" /run/host
      : >/run/.toolboxenv
      printf "engine=\"podman-5.6.2\"\nname=\"fedora-toolbox-43\"\nrootless=1\n" >/run/.containerenv
    else
      mkdir -p /run/systemd && printf "docker\n" >/run/systemd/container
    fi
    exec "$bin" facts --no-runtime --format json
  ' sh "$work" "$1" "$bin"
}

fail=0
check() { # name python-expression-over-facts
  if python3 -c "import json,sys; f=json.load(open(sys.argv[1]))['facts']; v=lambda k: f.get(k,{}).get('value'); s=lambda k: f.get(k,{}).get('status'); r=lambda k: f.get(k,{}).get('reason',''); sys.exit(0 if ($2) else 1)" "$3"; then
    echo "ok   $1"
  else
    echo "FAIL $1"
    fail=1
  fi
}

run_in toolbox >"$work/toolbox.json"
check "toolbox: runs in toolbox" "v('host.runs_in') == 'toolbox'" "$work/toolbox.json"
check "toolbox: host root is /run/host" "v('runenv.host_root').startswith('/run/host')" "$work/toolbox.json"
check "toolbox: the host's modprobe.d, not the image's" \
  "v('modprobe.options.ttm.pages_limit') == '31457280' and v('modprobe.files') == ['/etc/modprobe.d/ttm.conf']" "$work/toolbox.json"
check "toolbox: the host's os-release" "v('os.pretty_name') == 'Fedora Linux 43 (Workstation Edition)'" "$work/toolbox.json"

run_in docker >"$work/docker.json"
check "docker: runs in a container" "v('host.container') is True" "$work/docker.json"
check "docker: modprobe.d not read from the image" \
  "s('modprobe.files') == 'missing' and 'run halo-doctor on the host' in r('modprobe.files') and 'modprobe.options.ttm.pages_limit' not in f" "$work/docker.json"
check "docker: boot stack not planned from the image" "s('boot.stack') == 'missing'" "$work/docker.json"
exit $fail
