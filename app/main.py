"""Start Hearth: `hearth` (the gui-script) and `python -m app` both call `main()`.

Nothing heavy is imported before the window is on screen: no torch, no
llama.cpp (the engine thread imports its backend when it loads a model).
`--self-test` opens the real window, answers in several tabs at once and
prints one JSON line; packaging uses it to check a bundle.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Sequence, cast

from engine.paths import user_path

if TYPE_CHECKING:
    from PySide6.QtWidgets import QApplication

    from app.window.mainwindow import MainWindow

EPILOG = "Qt options (such as -platform offscreen) are passed on to Qt."


def parse_args(argv: Sequence[str]) -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(prog="hearth", description="Chat with local language models.", epilog=EPILOG)
    parser.add_argument("--model", metavar="PATH", type=user_path,  # absolute from here on: see engine/paths.py
                        help="load this GGUF file instead of the one in the settings")
    parser.add_argument("--theme", choices=("system", "light", "dark"), default="system", help="colour scheme")
    parser.add_argument("--verbose", action="store_true", help="log to the console too, with debug detail")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    parser.add_argument("--install-desktop-entry", action="store_true", help="add Hearth to the application menu")
    parser.add_argument("--uninstall-desktop-entry", action="store_true", help="remove it from the menu again")
    test = parser.add_argument_group("self-test")
    test.add_argument("--self-test", action="store_true", help="answer in several tabs at once, print JSON, exit")
    test.add_argument("--tabs", type=int, default=2, help="tabs answering at once in the self-test (default 2)")
    test.add_argument("--max-tokens", type=int, default=64, help="tokens per answer in the self-test (default 64)")
    test.add_argument("--timeout", type=float, default=180.0, help="seconds before the self-test gives up")
    hidden = argparse.SUPPRESS  # for tests of the history: not for people
    parser.add_argument("--send", metavar="TEXT", help=hidden)  # send TEXT in the current tab once the model is loaded
    parser.add_argument("--ignore-eos", action="store_true", help=hidden)
    parser.add_argument("--dump-restored", action="store_true", help=hidden)  # print the restored tabs as JSON, exit
    parser.add_argument("--startup-probe", type=float, metavar="SECONDS", help=hidden)  # app/misc/startup_probe.py
    parser.add_argument("--check-parts", action="store_true", help=hidden)  # app/misc/parts_check.py: math, web, voice
    return parser.parse_known_args(list(argv))


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `hearth` gui-script; returns the process exit status."""
    args, qt_args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.version:
        from app import __version__

        print(f"Hearth {__version__}")
        return 0
    if args.check_parts:
        from app.misc import parts_check

        return parts_check.main(qt_args)
    if args.install_desktop_entry or args.uninstall_desktop_entry:
        return _desktop_entry(install=args.install_desktop_entry)
    from app.misc import logs

    logs.setup_logging(verbose=args.verbose)
    try:
        return _run_window(args, qt_args)
    finally:
        logs.shutdown_logging()


def _run_window(args: argparse.Namespace, qt_args: list[str]) -> int:
    if args.self_test and _headless_linux():
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # a CI box or a container: no screen to open
    from PySide6.QtWidgets import QApplication

    import resources
    from app.misc import logs
    from app.window.mainwindow import MainWindow
    from app.window.theme import apply_theme

    QApplication.setApplicationName("Hearth")
    QApplication.setOrganizationName("Hearth")
    QApplication.setDesktopFileName(resources.APP_ID)
    app = cast(QApplication, QApplication.instance()) or QApplication([sys.argv[0], *qt_args])
    app.setWindowIcon(resources.app_icon())
    apply_theme(app, args.theme)  # type: ignore[arg-type]
    model_path = args.model
    if args.self_test and not model_path:  # the self-test checks the bundled model, not the user's choice
        from engine.catalog.default_model import default_model_path

        model_path = str(default_model_path() or "")
    window = MainWindow(model_path=model_path or None)
    if args.self_test:
        from app.window.selftest import SelfTest

        test = SelfTest(window, tabs=args.tabs, max_tokens=args.max_tokens, timeout_s=args.timeout)
        uninstall = logs.install_excepthooks(test.on_unhandled_error)
    else:
        from app.misc.crash_dialog import show_crash_dialog

        def on_error(report: logs.ErrorReport) -> None:
            show_crash_dialog(window, report)  # non-blocking; Hearth goes on

        uninstall = logs.install_excepthooks(on_error)
    if args.startup_probe is not None:
        from app.misc.startup_probe import StartupProbe

        probe = StartupProbe(window, app, args.startup_probe)  # noqa: F841 - alive as long as the window
    try:
        if args.dump_restored:
            _dump_restored(window, app)
        else:
            if args.send:
                _send_when_loaded(window, args)
            window.show()
        status = app.exec()
        return test.exit_status if args.self_test else status
    finally:
        window.bridge.shutdown()  # also when exec() ended without the window closing
        uninstall()


def _dump_restored(window: MainWindow, app: QApplication) -> None:
    """Print what the history put on screen as one JSON line, then quit (the engine is never started)."""
    import json

    from PySide6.QtCore import QTimer

    def dump() -> None:
        print(json.dumps(window.history_ui.dump()), flush=True)
        app.quit()

    window.history_ui.restored.connect(dump)
    QTimer.singleShot(60_000, lambda: app.exit(1))  # the history thread never answered


def _send_when_loaded(window: MainWindow, args: argparse.Namespace) -> None:
    from dataclasses import replace

    window.default_sampling = replace(window.default_sampling, max_new_tokens=args.max_tokens, ignore_eos=args.ignore_eos)

    def send() -> None:
        window.bridge.model_loaded.disconnect(send)  # only the first load
        tab = window.current_tab()
        if tab is not None:
            tab.input.setPlainText(args.send)
            tab.send()

    window.bridge.model_loaded.connect(send)


def _headless_linux() -> bool:
    return sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _desktop_entry(install: bool) -> int:
    from app.misc import desktop_entry

    result = desktop_entry.install_desktop_entry() if install else desktop_entry.uninstall_desktop_entry()
    print(result.message)
    return 0 if result.ok else 1
