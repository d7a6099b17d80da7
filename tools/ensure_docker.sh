#!/usr/bin/env bash
# Make a Docker daemon answer on its socket, for the sandbox's Docker backend and its tests.
#   tools/ensure_docker.sh            exit 0 once `docker info` works; prints `started <pid>` if it started dockerd
# 1. If dockerd is missing, install Debian's docker.io with apt-get (needs root and the Debian archive).
# 2. If no daemon answers, start `dockerd --iptables=false --bridge=none` (containers of the sandbox use
#    `--network none`, so no bridge or NAT is needed) with the overlay2 storage driver, else vfs; log under /tmp.
# 3. Wait (bounded) for the socket. The caller stops a daemon it started, by the printed PID.
set -euo pipefail
WAIT_S=${ENSURE_DOCKER_WAIT_S:-60}
LOG=${ENSURE_DOCKER_LOG:-/tmp/envsynth-dockerd.log}
ROOT=${ENSURE_DOCKER_DATA_ROOT:-/var/lib/docker}

answers() { timeout 10 docker info >/dev/null 2>&1; }

if command -v docker >/dev/null 2>&1 && answers; then exit 0; fi

if ! command -v dockerd >/dev/null 2>&1 || ! command -v docker >/dev/null 2>&1; then
    if [ "$(id -u)" != 0 ]; then echo "ensure_docker: docker.io is missing and installing it needs root" >&2; exit 1; fi
    export DEBIAN_FRONTEND=noninteractive
    # another apt-get (unattended upgrades, a parallel install) holds the dpkg lock: wait for it, bounded
    LOCK=(-o "DPkg::Lock::Timeout=${ENSURE_DOCKER_APT_LOCK_S:-300}")
    apt-get "${LOCK[@]}" update -q >&2
    apt-get "${LOCK[@]}" install -y -q --no-install-recommends docker.io >&2
    # a parallel caller may have installed and started it meanwhile
    if answers; then exit 0; fi
fi

if [ "$(id -u)" != 0 ]; then echo "ensure_docker: no daemon answers and starting dockerd needs root" >&2; exit 1; fi

start() {   # start dockerd with storage driver $1; print its PID once the socket answers
    : >"$LOG"
    dockerd --iptables=false --ip6tables=false --bridge=none --storage-driver="$1" --data-root="$ROOT" \
        >>"$LOG" 2>&1 </dev/null &
    local pid=$! deadline=$((SECONDS + WAIT_S))
    while [ $SECONDS -lt $deadline ]; do
        if ! kill -0 "$pid" 2>/dev/null; then return 1; fi
        if answers; then echo "$pid"; return 0; fi
        sleep 0.5
    done
    kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true
    return 1
}

for driver in overlay2 vfs; do
    if pid=$(start "$driver"); then echo "started $pid"; exit 0; fi
    echo "ensure_docker: dockerd with storage driver $driver did not come up; log tail:" >&2
    tail -n 5 "$LOG" >&2 || true
done
echo "ensure_docker: could not start dockerd (full log: $LOG)" >&2
exit 1
