#!/bin/sh
# Debian/Ubuntu libraries Qt's xcb and offscreen platforms load; installed only
# when missing and when we can (root, apt-get). Elsewhere this does nothing.
command -v apt-get >/dev/null 2>&1 || exit 0
command -v ldconfig >/dev/null 2>&1 || exit 0
missing=""
check() { ldconfig -p | grep -q "$1" || missing="$missing $2"; }
check libEGL.so.1 libegl1
check libGL.so.1 libgl1
check libfontconfig.so.1 libfontconfig1
check libxkbcommon.so.0 libxkbcommon0
check libxkbcommon-x11.so.0 libxkbcommon-x11-0
check libxcb-cursor.so.0 libxcb-cursor0
check libxcb-icccm.so.4 libxcb-icccm4
check libxcb-keysyms.so.1 libxcb-keysyms1
check libxcb-shape.so.0 libxcb-shape0
check libxcb-xinerama.so.0 libxcb-xinerama0
check libxcb-randr.so.0 libxcb-randr0
check libxcb-render-util.so.0 libxcb-render-util0
check libxcb-image.so.0 libxcb-image0
check libdbus-1.so.3 libdbus-1-3
check libglib-2.0.so.0 libglib2.0-0
# A program, not a library: the desktop-entry test validates with it.
command -v desktop-file-validate >/dev/null 2>&1 || missing="$missing desktop-file-utils"
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != "0" ]; then
    echo "hearth: Qt needs these Debian packages:$missing (run: sudo apt-get install$missing)"
    exit 0
fi
echo "hearth: installing Qt's libraries:$missing"
apt-get update -qq >/dev/null 2>&1
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null || echo "hearth: apt-get failed; Qt may not start"
