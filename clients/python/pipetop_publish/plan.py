"""Plans of ``pipetop tune`` inside an instrumented script.

``pipetop tune -- CMD`` runs CMD many times ("trials"), each with a plan of
loader and thread settings named by ``PIPETOP_PLAN`` (a JSON file, schema
``pipetop-plan/1``); the automatic instrumentation (auto.py) applies it
inside the unmodified script:

- ``loader``: the keyword and positional arguments of every DataLoader made
  at the plan's creation site (``basename:line`` of the user's file, or the
  training loader's site once known) are overridden before
  ``DataLoader.__init__`` runs; ``worker_threads`` wraps the loader's
  ``worker_init_fn`` so that each worker runs with that many threads.
- ``threads.main``: ``torch.set_num_threads`` in the main process when
  torch is imported; the script's own later calls are overridden.
- ``loader.video_threads``: every PyAV video stream a process of the run
  opens (``av.open``) decodes with that many threads (frame and slice
  threading, ``thread_type = "AUTO"``).
- ``loader.uint8``: the float images at those keys of the planned loader's
  batches (``[{"key": "['image']", "scale": 255, "dtype": "float32"}]``,
  keys as the batch trip names them) leave its workers as uint8 (rounded
  from ``x * scale``: values uint8 holds exactly) and are converted back to
  their dtype (divided by the scale) as the training step takes the batch:
  the transport costs a quarter, the conversion is the step's.

Every DataLoader also gets its creation site recorded (one frame walk per
DataLoader made), with or without a plan: pipetop bisect's phase file names
the training loader's site and arguments. A plan that cannot be applied is
noted, never raised: ``PIPETOP_PLAN_OUT/plan-PID.json`` (schema
``pipetop-plan-report/1``) says what was applied and why not.
"""

from __future__ import annotations

import ast
import atexit
import inspect
import json
import multiprocessing
import os
import re
import sys
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

__all__ = ["Plan", "Uint8Collate", "WorkerThreads", "active", "creation_site", "effective_args", "init_wrapper", "key_path", "load",
           "on_av", "site_fields", "start"]

SCHEMA = "pipetop-plan/1"
REPORT_SCHEMA = "pipetop-plan-report/1"

# The DataLoader arguments a plan may set, with their JSON types.
LOADER_ARGS = ("num_workers", "prefetch_factor", "persistent_workers", "pin_memory")
_LOADER_FIELDS: Dict[str, type] = {"site": str, "num_workers": int, "prefetch_factor": int,
                                   "persistent_workers": bool, "pin_memory": bool, "worker_threads": int,
                                   "video_threads": int, "uint8": list}
_MINIMUM = {"num_workers": 0, "prefetch_factor": 1, "worker_threads": 1, "main": 1, "video_threads": 1}
_FLOATS = ("float16", "bfloat16", "float32", "float64")
# The variables thread pools loaded after a worker's start read.
_THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")

# Frames in these directories are not the user's (see creation_site).
_OWN_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_skip_dirs: Tuple[str, ...] = (_OWN_DIR,)

# The plan of this process (None: no plan, the run as it is).
active: Optional["Plan"] = None

# The thread count torch.set_num_threads is held at in this process (None:
# the calls pass through): the plan's main threads in the main process, its
# worker threads in a loader worker.
_forced: Optional[int] = None


# ---------------------------------------------------------------------------
# Creation sites (every DataLoader, with or without a plan)


def creation_site() -> Optional[Tuple[str, int]]:
    """(absolute path, line) of the first frame of the caller's stack
    outside torch and pipetop_publish: where the user made the DataLoader
    being constructed; None when the whole stack is theirs."""
    f = sys._getframe(1)
    while f is not None:
        name = f.f_code.co_filename
        if not name.startswith(_skip_dirs) and not name.startswith("<frozen"):
            return os.path.abspath(name), f.f_lineno
        f = f.f_back
    return None


def site_name(site: Tuple[str, int]) -> str:
    """A site as the plan names it: basename:line."""
    return "%s:%d" % (os.path.basename(site[0]), site[1])


def effective_args(loader: Any) -> Dict[str, Any]:
    """The plan's DataLoader arguments as loader was made with them
    (prefetch_factor null without workers, where it does nothing)."""
    workers = int(getattr(loader, "num_workers", 0) or 0)
    return {"num_workers": workers,
            "prefetch_factor": getattr(loader, "prefetch_factor", None) if workers else None,
            "persistent_workers": bool(getattr(loader, "persistent_workers", False)),
            "pin_memory": bool(getattr(loader, "pin_memory", False))}


def site_fields(loader: Any) -> Dict[str, Any]:
    """The creation site and arguments of loader for pipetop bisect's phase
    file (nulls when its site is unknown)."""
    site = getattr(loader, "_pipetop_site", None)
    if site is None:
        return {"site": None, "site_path": None, "site_line": None, "args": effective_args(loader)}
    return {"site": site_name(site), "site_path": site[0], "site_line": site[1], "args": effective_args(loader)}


def init_wrapper(orig: Callable) -> Callable:
    """DataLoader.__init__: records the creation site on the loader and,
    at the plan's site, makes it with the plan's arguments."""

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        site = plan = None
        new: Any = None
        try:
            site = creation_site()
            plan = active
            if plan is not None and site is not None and plan.wants(site):
                new = plan.override(orig, self, site, args, kwargs)
        except Exception as e:  # noqa: BLE001 - the script's own arguments then
            _note(plan, "plan not applied at a DataLoader: internal error %r" % (e,))
            new = None
        if new is None:
            orig(self, *args, **kwargs)
        else:
            try:
                orig(self, *new[0], **new[1])
            except Exception as e:  # noqa: BLE001 - refused: the script's own arguments
                _note(plan, "DataLoader at %s refused the plan's arguments (%r): the script's own used" % (site_name(site), e))
                new = None
                orig(self, *args, **kwargs)
        try:
            if site is not None:
                self._pipetop_site = site
                if plan is not None:
                    plan.seen.setdefault(site_name(site), None)
            if new is not None:
                plan.made(self, site)
        except Exception as e:  # noqa: BLE001 - the site is optional
            _note(plan, "DataLoader site not recorded: %r" % (e,))

    __init__.__wrapped__ = orig  # type: ignore[attr-defined]
    return __init__


def _note(plan: Optional["Plan"], msg: str) -> None:
    """A note in the plan report (on stderr without a plan)."""
    if plan is not None:
        plan.note(msg)
    else:
        sys.stderr.write("pipetop: %s\n" % (msg,))


# ---------------------------------------------------------------------------
# Threads


def threads_wrapper(orig: Callable) -> Callable:
    """torch.set_num_threads: held at the plan's value where it forces one
    (the script's call noted in the main process)."""

    def set_num_threads(n: int) -> None:
        forced = _forced
        if forced is None:
            return orig(n)
        if n != forced and active is not None:
            active.note("the script's torch.set_num_threads(%s) overridden by the plan: %d" % (n, forced))
        return orig(forced)

    set_num_threads.__wrapped__ = orig  # type: ignore[attr-defined]
    set_num_threads.__doc__ = getattr(orig, "__doc__", None)
    return set_num_threads


class WorkerThreads:
    """The worker_init_fn of a planned loader with worker_threads: sets the
    thread variables and torch's threads (held there), then calls the
    user's own worker_init_fn. Picklable for spawned workers."""

    def __init__(self, threads: int, user: Optional[Callable[[int], None]]) -> None:
        self.threads = threads
        self.user = user

    def __call__(self, worker_id: int) -> None:
        global _forced
        for name in _THREAD_ENV:
            os.environ[name] = str(self.threads)
        import torch

        _forced = self.threads
        torch.set_num_threads(self.threads)
        if self.user is not None:
            self.user(worker_id)


def _forked() -> None:
    """A forked child (a loader worker) is not held at the main threads."""
    global _forced
    _forced = None


# ---------------------------------------------------------------------------
# The plan file


def load(path: str) -> "Plan":
    """The plan in file path; ValueError (or OSError) saying what is wrong."""
    with open(path) as f:
        doc = json.load(f)
    if not isinstance(doc, dict):
        raise ValueError("not a JSON object")
    if doc.get("schema") != SCHEMA:
        raise ValueError("schema %r, want %r" % (doc.get("schema"), SCHEMA))
    for key in doc:
        if key not in ("schema", "loader", "threads"):
            raise ValueError("unknown field %r" % (key,))
    loader = _section(doc, "loader", _LOADER_FIELDS)
    threads = _section(doc, "threads", {"main": int})
    site = loader.get("site")
    if site is not None and not _site_ok(site):
        raise ValueError("loader.site %r is not FILE:LINE" % (site,))
    loader["uint8"] = [_uint8_entry(e) for e in loader.get("uint8", [])]
    return Plan(path, loader, threads)


def _uint8_entry(e: Any) -> Tuple[List[Union[str, int]], int, str]:
    """One loader.uint8 entry checked: (key path, scale, dtype name)."""
    if not isinstance(e, dict) or set(e) - {"key", "scale", "dtype"} or not isinstance(e.get("key"), str):
        raise ValueError("loader.uint8 entry %s: want {\"key\": ..., \"scale\": 1 or 255, \"dtype\": ...}" % json.dumps(e))
    scale, dtype = e.get("scale", 1), e.get("dtype", "float32")
    if scale not in (1, 255) or isinstance(scale, bool) or dtype not in _FLOATS:
        raise ValueError("loader.uint8 entry %s: scale 1 or 255, dtype one of %s" % (json.dumps(e), ", ".join(_FLOATS)))
    return key_path(e["key"]), scale, dtype


_KEY_PART = re.compile(r"\[('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|-?\d+)\]")


def key_path(key: str) -> List[Union[str, int]]:
    """A batch key as the batch trip names it ("['obs'][0]", "" for the
    whole batch) as the indexes it is made of; ValueError if it is not one."""
    out: List[Union[str, int]] = []
    at = 0
    for m in _KEY_PART.finditer(key):
        if m.start() != at:
            break
        out.append(ast.literal_eval(m.group(1)))
        at = m.end()
    if at != len(key):
        raise ValueError("batch key %r is not a chain of [index]" % (key,))
    return out


def _section(doc: Dict[str, Any], name: str, fields: Dict[str, type]) -> Dict[str, Any]:
    """doc[name] checked against fields (name: JSON type); {} when absent."""
    part = doc.get(name)
    if part is None:
        return {}
    if not isinstance(part, dict):
        raise ValueError("%s is not an object" % (name,))
    for key, value in part.items():
        want = fields.get(key)
        if want is None:
            raise ValueError("unknown field %s.%s" % (name, key))
        if not isinstance(value, want) or (want is int and isinstance(value, bool)):
            raise ValueError("%s.%s=%s is not a %s" % (name, key, json.dumps(value), want.__name__))
        if want is int and value < _MINIMUM[key]:
            raise ValueError("%s.%s=%d is below %d" % (name, key, value, _MINIMUM[key]))
    return part


def _site_ok(site: str) -> bool:
    """Whether site reads FILE:LINE."""
    name, _, line = site.rpartition(":")
    return bool(name) and line.isdigit()


def start(torch: Any, environ: Any, patches: Any, training_site: Callable[[], Optional[Tuple[str, int]]]) -> None:
    """torch was just imported: load $PIPETOP_PLAN, if any, and arm it
    (patches records torch.set_num_threads's replacement; training_site
    gives the training loader's site once an optimizer step followed its
    batches)."""
    global active, _skip_dirs, _forced
    _skip_dirs = (_OWN_DIR, os.path.dirname(os.path.abspath(torch.__file__)) + os.sep)
    path = environ.get("PIPETOP_PLAN", "").strip()
    if not path:
        return
    main = not _child()
    try:
        plan = load(path)
    except (OSError, ValueError) as e:
        if main:  # said once, not by every spawned worker
            sys.stderr.write("pipetop: plan %s not applied: %s\n" % (path, _reason(e)))
        return
    plan.out = environ.get("PIPETOP_PLAN_OUT", "") if main else ""
    plan.torch, plan.training_site = torch, training_site
    active = plan
    if plan.uint8:
        from torch.utils.data import dataloader as dl

        patches.set(dl._BaseDataLoaderIter, "__next__", _restore_wrapper)
    if "av" in sys.modules:
        on_av(sys.modules["av"], patches)
    if plan.main_threads is None and plan.worker_threads is None:
        return
    patches.set(torch, "set_num_threads", threads_wrapper)
    os.register_at_fork(after_in_child=_forked)
    if main and plan.main_threads is not None:
        _forced = plan.main_threads
        torch.set_num_threads.__wrapped__(plan.main_threads)
    plan.write()


def on_av(av: Any, patches: Any) -> None:
    """PyAV is imported (or was, before the plan): with video_threads,
    av.open gives each video stream it opens that many decoder threads."""
    plan = active
    if plan is None or plan.video_threads is None or getattr(av, "_pipetop_video_threads", False):
        return
    n = plan.video_threads

    def wrap(orig: Callable) -> Callable:
        def open(*args: Any, **kwargs: Any) -> Any:  # noqa: A001 - av.open's name
            container = orig(*args, **kwargs)
            try:
                for stream in getattr(container.streams, "video", ()):
                    stream.codec_context.thread_type = "AUTO"
                    stream.codec_context.thread_count = n
            except Exception as e:  # noqa: BLE001 - the stream decodes as it would
                plan.note("video_threads not applied: %r" % (e,))
            return container

        open.__wrapped__ = orig  # type: ignore[attr-defined]
        return open

    patches.set(av, "open", wrap)
    av._pipetop_video_threads = True


class Uint8Collate:
    """The collate_fn of a planned loader with uint8 keys: the user's own
    (or torch's default), then the float images at the keys as uint8.
    ``restore`` turns them back, in the main process. Picklable for spawned
    workers."""

    def __init__(self, inner: Callable[[Any], Any], keys: List[Tuple[List[Union[str, int]], int, str]]) -> None:
        self.inner, self.keys = inner, keys

    def __call__(self, items: Any) -> Any:
        batch = self.inner(items)
        for path, scale, _ in self.keys:
            batch = _apply(batch, path, lambda x, s=scale: _to_uint8(x, s))
        return batch

    def restore(self, batch: Any) -> Any:
        """batch with the keys back in their dtype."""
        for path, scale, dtype in self.keys:
            batch = _apply(batch, path, lambda x, s=scale, d=dtype: _from_uint8(x, s, d))
        return batch


def _apply(obj: Any, path: List[Union[str, int]], f: Callable[[Any], Any]) -> Any:
    """obj with f applied to what sits at path (dicts and lists copied,
    tuples rebuilt); obj itself when the path leads nowhere."""
    if not path:
        return f(obj)
    head, rest = path[0], path[1:]
    try:
        inner = obj[head]
    except (KeyError, IndexError, TypeError):
        return obj
    new = _apply(inner, rest, f)
    if new is inner:
        return obj
    if isinstance(obj, dict):
        out = dict(obj)
        out[head] = new
        return type(obj)(out) if type(obj) is not dict else out
    if isinstance(obj, list):
        return obj[:head] + [new] + obj[head + 1:] if head >= 0 else obj
    if isinstance(obj, tuple):
        items = list(obj)
        items[head] = new
        return type(obj)(*items) if hasattr(obj, "_fields") else tuple(items)
    return obj


def _to_uint8(x: Any, scale: int) -> Any:
    """A float tensor of values uint8 holds (after * scale) as uint8."""
    if not hasattr(x, "is_floating_point") or not x.is_floating_point():
        return x
    return (x * scale).round_().to(active.torch.uint8) if scale != 1 else x.round().to(active.torch.uint8)


def _from_uint8(x: Any, scale: int, dtype: str) -> Any:
    """A uint8 tensor back in dtype, divided by scale."""
    torch = active.torch
    if getattr(x, "dtype", None) is not torch.uint8:
        return x
    y = x.to(getattr(torch, dtype))
    return y.div_(scale) if scale != 1 else y


def _restore_wrapper(orig: Callable) -> Callable:
    """DataLoader iterator __next__: a batch of a planned loader with uint8
    keys turned back, outside the time the batch waited for."""

    def __next__(self: Any) -> Any:
        batch = orig(self)
        c = getattr(self, "_collate_fn", None)
        if isinstance(c, Uint8Collate):
            batch = c.restore(batch)
        return batch

    __next__.__wrapped__ = orig  # type: ignore[attr-defined]
    return __next__


def _child() -> bool:
    """Whether this process is a multiprocessing child: a spawned loader
    worker imports torch (with the main module) once its name is set,
    before parent_process() knows its parent."""
    return multiprocessing.parent_process() is not None or multiprocessing.current_process().name != "MainProcess"


def _reason(e: BaseException) -> str:
    """An error loading a plan as one line."""
    if isinstance(e, OSError):
        return e.strerror or repr(e)
    return str(e).splitlines()[0] if str(e) else repr(e)


class Plan:
    """One plan applied in this process (see the module doc)."""

    def __init__(self, path: str, loader: Dict[str, Any], threads: Dict[str, Any]) -> None:
        self.path = path
        self.pid = os.getpid()
        self.out = ""
        self.site: Optional[str] = loader.get("site")
        self.args = {k: loader[k] for k in LOADER_ARGS if k in loader}
        self.worker_threads: Optional[int] = loader.get("worker_threads")
        self.video_threads: Optional[int] = loader.get("video_threads")
        self.uint8: List[Tuple[List[Union[str, int]], int, str]] = loader.get("uint8") or []
        self.main_threads: Optional[int] = threads.get("main")
        self.torch: Any = None
        self.training_site: Callable[[], Optional[Tuple[str, int]]] = lambda: None
        self.resolved: Optional[str] = None  # the training loader's site, when the plan names none
        self.notes: Dict[str, None] = {}  # in order, each once
        self.applied: Dict[str, Dict[str, Any]] = {}  # by site and effective arguments
        self.seen: Dict[str, None] = {}  # the sites of every DataLoader made, in order
        self.threaded = False  # worker_threads reached a loader with workers
        self.signature: Optional[inspect.Signature] = None
        atexit.register(self.end)

    # -- which DataLoader ----------------------------------------------------------

    def wants(self, site: Tuple[str, int]) -> bool:
        """Whether the DataLoader being made at site gets the plan."""
        if not self.args and self.worker_threads is None and not self.uint8:
            return False
        target = self.site or self._training()
        if target is None:
            return False
        return target == (site_name(site) if "/" not in target else "%s:%d" % site)

    def _training(self) -> Optional[str]:
        """The training loader's site (a plan without one): known once an
        optimizer step followed its batches, too late for that loader, in
        time for the ones made there later (one per epoch)."""
        if self.resolved is None:
            site = self.training_site()
            if site is not None:
                self.resolved = site_name(site)
                self.note("no site in the plan: the training loader's, %s, found at the first optimizer step; "
                          "applied to the DataLoaders made there afterwards" % (self.resolved,))
        return self.resolved

    # -- the arguments -----------------------------------------------------------------

    def override(self, orig: Callable, loader: Any, site: Tuple[str, int], args: Tuple[Any, ...],
                 kwargs: Dict[str, Any]) -> Tuple[Tuple[Any, ...], Dict[str, Any]]:
        """The arguments (positional, keyword) DataLoader.__init__ (orig) is
        called with at a planned site, for loader."""
        if self.signature is None:
            self.signature = inspect.signature(orig)
        bound = self.signature.bind(loader, *args, **kwargs)
        given = bound.arguments
        where = site_name(site)
        want = dict(self.args)
        workers = want.get("num_workers", given.get("num_workers", self._default("num_workers")))
        if workers == 0:
            self._without_workers(want, given, where)
        else:
            if self.worker_threads is not None:
                given["worker_init_fn"] = WorkerThreads(self.worker_threads, given.get("worker_init_fn"))
                self.threaded = True
            if self.uint8:
                given["collate_fn"] = Uint8Collate(given.get("collate_fn") or self._collate(given), self.uint8)
        given.update(want)
        self._kind_notes(want, given, where)
        return bound.args[1:], bound.kwargs

    def _without_workers(self, want: Dict[str, Any], given: Dict[str, Any], where: str) -> None:
        """num_workers=0, where torch refuses a prefetch_factor and
        persistent workers: the plan's are not applied, and the script's
        own are dropped when the plan took its workers away."""
        for name in ("prefetch_factor", "persistent_workers"):
            if name in want and (name == "prefetch_factor" or want[name]):
                del want[name]
                self.note("%s needs num_workers > 0: not applied at %s" % (name, where))
            own = given.get(name, self._default(name))
            if "num_workers" in self.args and own != self._default(name) and (name == "prefetch_factor" or own):
                given[name] = self._default(name)
                self.note("num_workers=0 at %s: the script's %s=%s dropped" % (where, name, json.dumps(own)))
        if self.worker_threads is not None:
            self.note("worker_threads needs num_workers > 0: not applied at %s" % (where,))
        if self.uint8:
            self.note("the uint8 transport needs num_workers > 0: not applied at %s" % (where,))

    def _collate(self, given: Dict[str, Any]) -> Callable[[Any], Any]:
        """torch's own collate_fn for a DataLoader made with given: batches
        collated, or each item converted when it batches nothing."""
        from torch.utils.data._utils import collate

        if given.get("batch_size", 1) is None and given.get("batch_sampler") is None:
            return collate.default_convert
        return collate.default_collate

    def _kind_notes(self, want: Dict[str, Any], given: Dict[str, Any], where: str) -> None:
        """Notes on settings applied where they may do nothing."""
        if want.get("pin_memory") and not self.torch.cuda.is_available():
            self.note("pin_memory without CUDA: applied at %s, does nothing" % (where,))
        if isinstance(given.get("dataset"), self.torch.utils.data.IterableDataset):
            self.note("IterableDataset at %s: applied; num_workers changes how it shards" % (where,))
        if given.get("batch_sampler") is not None:
            self.note("custom batch_sampler at %s: applied; its batches are its own" % (where,))

    def _default(self, name: str) -> Any:
        """DataLoader.__init__'s default for argument name."""
        return self.signature.parameters[name].default

    def made(self, loader: Any, site: Tuple[str, int]) -> None:
        """A DataLoader was made at a planned site with the plan."""
        args = effective_args(loader)
        args["worker_threads"] = self.worker_threads if args["num_workers"] and self.worker_threads is not None else None
        if self.uint8:
            args["uint8"] = len(self.uint8) if args["num_workers"] else None
        key = json.dumps([site_name(site), args], sort_keys=True)
        entry = self.applied.get(key)
        if entry is None:
            self.applied[key] = {"site": site_name(site), "args": args, "loaders": 1}
            self.write()
        else:
            entry["loaders"] += 1

    # -- the report --------------------------------------------------------------------

    def note(self, msg: str) -> None:
        """A sentence for the report (the main process's only)."""
        if os.getpid() == self.pid and msg not in self.notes:
            self.notes[msg] = None
            self.write()

    def doc(self, ending: bool = False) -> Dict[str, Any]:
        """The report's content (ending: the process exits)."""
        notes: List[str] = list(self.notes)
        target = self.site or self.resolved
        if ending and (self.args or self.worker_threads is not None or self.uint8) and not self.applied:
            notes.append(self._unmatched(target))

        main = None
        try:
            main = int(self.torch.get_num_threads()) if self.torch is not None else None
        except Exception:  # noqa: BLE001 - a report without it
            pass
        return {"schema": REPORT_SCHEMA, "pid": self.pid, "plan": self.path,
                "applied": list(self.applied.values()),
                "threads": {"main": main, "worker": self.worker_threads if self.threaded else None},
                "notes": notes}

    def _unmatched(self, target: Optional[str]) -> str:
        """The note of a plan that reached no DataLoader."""
        if not target:
            return "no site in the plan and no training loader found: nothing applied"
        if not self.seen:
            return "no DataLoader was made at %s" % (target,)
        return ("no DataLoader was made at %s (the script made its DataLoaders at %s): nothing applied; "
                "if the script changed since the plan was written, tune it again" % (target, ", ".join(self.seen)))

    def end(self) -> None:
        """The process exits: the report's last version."""
        self.write(ending=True)

    def write(self, ending: bool = False) -> None:
        """(Re)write PIPETOP_PLAN_OUT/plan-PID.json (temp name, rename); only
        the process that loaded the plan, never a worker, writes it."""
        if not self.out or os.getpid() != self.pid:
            return
        path = os.path.join(self.out, "plan-%d.json" % self.pid)
        tmp = path + ".tmp"
        try:
            with open(tmp, "w") as f:
                json.dump(self.doc(ending), f, indent=1)
            os.replace(tmp, path)
        except (OSError, TypeError, ValueError) as e:
            sys.stderr.write("pipetop: plan report %s not written: %r\n" % (path, e))
