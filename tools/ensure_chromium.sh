#!/usr/bin/env bash
# Make Debian's Chromium available for tests/test_docs_site.py (playwright drives it; it downloads no browser).
#   tools/ensure_chromium.sh     prints the browser's path and exits 0 once it is installed
# If it is missing, installs Debian's `chromium` with apt-get (needs root and the Debian archive).
set -euo pipefail
find_it() { command -v chromium || command -v chromium-browser || { [ -x /usr/bin/chromium ] && echo /usr/bin/chromium; }; }
if path=$(find_it); then echo "$path"; exit 0; fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "ensure_chromium: Chromium is missing; install Debian's chromium as root: apt-get install -y chromium" >&2; exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# another apt-get (a parallel install, tools/ensure_docker.sh) holds the dpkg lock: wait for it, bounded
LOCK=(-o "DPkg::Lock::Timeout=${ENSURE_CHROMIUM_APT_LOCK_S:-300}")
apt-get "${LOCK[@]}" update -q >&2
apt-get "${LOCK[@]}" install -y -q chromium >&2
path=$(find_it) || { echo "ensure_chromium: apt-get installed chromium but no chromium binary is on PATH" >&2; exit 1; }
echo "$path"
