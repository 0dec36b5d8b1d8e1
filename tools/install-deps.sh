#!/bin/sh
# Install the Debian packages ctensor needs, if any is missing: with apt-get when run as
# root, else print the exact command to run.
set -e
packages="build-essential cmake pkg-config libopenblas-dev zlib1g-dev python3-numpy gnuplot-nox
          dataset-fashion-mnist"
missing=""
for p in $packages; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ]; then
    echo "installing:$missing"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
else
    echo "missing Debian packages:$missing"
    echo "run: sudo apt-get install -y$missing"
    exit 1
fi
