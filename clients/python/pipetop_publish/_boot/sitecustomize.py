"""pipetop's bootstrap: on PYTHONPATH (``pipetop run`` puts it there), it
switches on the automatic PyTorch instrumentation in every Python process,
unless PIPETOP_AUTO=0, then runs the sitecustomize it shadows, if any."""


def _pipetop_boot() -> None:
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    pkg_parent = os.path.dirname(os.path.dirname(here))
    if pkg_parent not in sys.path:
        sys.path.append(pkg_parent)
    off = os.environ.get("PIPETOP_AUTO", "1").strip().lower() in ("0", "false", "no", "off")
    try:
        if not off:
            from pipetop_publish import auto

            auto.install()
    except Exception as e:  # noqa: BLE001 - never break the interpreter's start
        sys.stderr.write("pipetop: automatic instrumentation unavailable: %r\n" % (e,))
    # Chain to the sitecustomize this one hides (Debian ships one).
    import importlib.machinery
    import importlib.util

    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        mod = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(mod)
        except Exception as e:  # noqa: BLE001
            sys.stderr.write("pipetop: %s: %r\n" % (spec.origin, e))


_pipetop_boot()
del _pipetop_boot
