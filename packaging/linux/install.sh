#!/bin/sh
# Install a built Hearth bundle for the current user and add it to the application menu.
#
#   sh packaging/linux/install.sh [BUNDLE_DIR]     install (default BUNDLE_DIR: dist/hearth)
#   sh packaging/linux/install.sh --uninstall      remove the menu entry, the link and the copy
#
# The bundle is copied to $XDG_DATA_HOME/hearth/app (default ~/.local/share/hearth/app),
# ~/.local/bin/hearth links to it, and `hearth --install-desktop-entry` writes the
# .desktop file and the icons. Nothing outside your home folder is touched.
set -eu

DATA_HOME="${XDG_DATA_HOME:-$HOME/.local/share}"
TARGET="$DATA_HOME/hearth/app"
LINK="$HOME/.local/bin/hearth"

if [ "${1:-}" = "--uninstall" ]; then
    if [ -x "$TARGET/hearth" ]; then
        "$TARGET/hearth" --uninstall-desktop-entry
    fi
    if [ -L "$LINK" ]; then rm -f "$LINK"; fi
    rm -rf "$TARGET"
    echo "Hearth removed (your chats and settings stay in their folders)."
    exit 0
fi

BUNDLE="${1:-dist/hearth}"
if [ ! -x "$BUNDLE/hearth" ]; then
    echo "No bundle at $BUNDLE (expected $BUNDLE/hearth): build one with 'make bundle' first." >&2
    exit 1
fi
mkdir -p "$(dirname "$TARGET")" "$(dirname "$LINK")"
rm -rf "$TARGET.new"
cp -a "$BUNDLE" "$TARGET.new"
rm -rf "$TARGET"
mv "$TARGET.new" "$TARGET"
ln -sf "$TARGET/hearth" "$LINK"
"$TARGET/hearth" --install-desktop-entry
case ":$PATH:" in
    *":$HOME/.local/bin:"*) ;;
    *) echo "Note: $HOME/.local/bin is not on your PATH; the menu entry works regardless." ;;
esac
