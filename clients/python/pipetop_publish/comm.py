"""Collectives and DDP gradient synchronisation under the automatic
instrumentation: the time the training thread is blocked in
``torch.distributed`` counts as the ``comm`` stage.

* The collectives (``all_reduce``, ``all_gather``, ``reduce_scatter``,
  ``broadcast``, ``barrier`` and the rest of the list below) and
  ``Work.wait`` of their async handles are comm. Called inside another
  instrumented call (a forward, a backward, an optimizer step), their time
  is taken out of that call's stage and counted as comm.
* ``DistributedDataParallel``: an outermost backward while a DDP module is
  in use queues a callback on the autograd engine (``arm``), which runs once
  every gradient is computed, before DDP's own end-of-backward callback
  blocks on the buckets' reductions. The backward after it is the wait for
  the other ranks: comm; the rest is this rank's own compute.
* Bucket detail: DDP's bucket sizes and its own sampled times go into the
  run summary's ``ddp`` section. With ``PIPETOP_DDP_HOOK=1``, a
  communication hook doing what DDP's built-in all-reduce does (divide by
  the world size, all-reduce asynchronously) also times each bucket from
  ready to reduced; a hook the user registers is wrapped the same way.

Nothing happens without ``torch.distributed`` or a process group: the
wrappers pass straight through unless the training thread calls them while
the instrumentation is recording. The patches are the same for every backend
(Gloo, NCCL). On CUDA the CPU times are when the work was handed over and
when the CPU learnt it was done (NCCL's waits block the stream, not the
CPU), and the GPU side is split with CUDA events on the current stream: a
collective's pair measures how long the stream waited for it (taken out
of the stage around it), and an event recorded when a DDP backward's
gradients were all launched splits that backward's GPU time into its own
compute and the wait for the reductions, counted as comm. FSDP, ``torch.distributed.pipeline`` and DDP's built-in hooks
(``_register_builtin_comm_hook``) are not split: their collectives called
from Python are comm, the rest stays in the stage that runs them. A
built-in hook must be registered before the module's first forward (after
it, pipetop's hook holds DDP's one registration); a Python hook registered
later is routed through pipetop's.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from typing import Any, Callable, Dict, List, Optional

from .stages import COMM, OTHER

_now = time.perf_counter_ns

#: The torch.distributed functions timed as comm, where the installed torch has them.
COLLECTIVES = (
    "all_reduce", "all_gather", "all_gather_into_tensor", "_all_gather_base", "reduce_scatter",
    "reduce_scatter_tensor", "_reduce_scatter_base", "broadcast", "barrier", "monitored_barrier",
    "reduce", "gather", "scatter", "all_to_all", "all_to_all_single", "all_gather_object",
    "broadcast_object_list", "gather_object", "scatter_object_list", "all_reduce_coalesced",
    "all_gather_coalesced",
)


def enabled() -> bool:
    """Report whether PIPETOP_COMM allows these patches (default on; 0
    leaves torch.distributed and DDP alone, their time in the stages that
    call them)."""
    return os.environ.get("PIPETOP_COMM", "1").strip().lower() not in ("0", "false", "no", "off")


def bucket_hook() -> bool:
    """Report whether PIPETOP_DDP_HOOK asks for pipetop's own DDP
    communication hook (per-bucket times; it costs a Python call and a
    callback per bucket, see docs/python.md)."""
    return os.environ.get("PIPETOP_DDP_HOOK", "0").strip().lower() in ("1", "true", "yes", "on")


def arm(st: Any, root: Any) -> Any:
    """Before an outermost backward from root while DDP is in use: a hook on
    root's gradient (the first thing the backward computes) queues a
    callback on the autograd engine, which runs once every gradient is
    computed and before DDP's own end-of-backward callback waits for the
    reductions. Its time splits the backward into this rank's compute and
    the wait for the other ranks. Returns the hook's handle (None: not
    armed)."""
    if getattr(root, "grad_fn", None) is None:
        return None
    engine = st.torch.autograd.Variable._execution_engine

    def computed() -> None:
        st.ddp_ready = _now()
        pub = st.pub
        if pub is not None:
            pub._where = (COMM, st.ddp_ready)  # progress frames say comm from here
            if pub._gpu is not None:
                # On the stream, after every gradient kernel and before
                # DDP makes it wait for the reductions.
                st.gpu_ready = pub._gpu.begin()

    def queue(grad: Any) -> None:
        engine.queue_callback(computed)

    return root.register_hook(queue)


def ddp_report(modules: List[Any], steps: int) -> Optional[Dict[str, Any]]:
    """The summary's ddp section from DDP's own logging data (bucket sizes,
    its sampled comm and compute times), for the first DDP module still
    alive; None when none is."""
    for ref in modules:
        m = ref()
        if m is None:
            continue
        try:
            d = m._get_ddp_logging_data()
        except Exception:  # noqa: BLE001 - a prototype interface of torch
            return None
        raw = d.get("rebuilt_bucket_sizes") or d.get("bucket_sizes") or ""
        sizes = [int(x) for x in str(raw).replace(",", " ").split() if x.isdigit()]
        return {"hooks": [], "buckets": len(sizes) * steps, "buckets_per_step": float(len(sizes)), "bytes": sum(sizes) * steps,
                "bytes_per_step": float(sum(sizes)), "bucket_bytes": sizes,
                "ddp_backward_comm_ns": d.get("avg_backward_comm_time", 0), "ddp_backward_compute_ns": d.get("avg_backward_compute_time", 0),
                "ddp_overlap_ns": d.get("avg_backward_compute_comm_overlap_time", 0)}
    return None


class Buckets:
    """DDP's gradient buckets over the run: how many were reduced, their
    bytes, and the time from each one ready to its reduction done. The hook
    adds from the autograd thread, the completions from the backend's
    threads; the lock keeps the sums whole."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.buckets = 0
        self.bytes = 0
        self.reduced = 0
        self.ready_to_done_ns = 0
        self.ready_to_done_max_ns = 0
        self.hooks: List[str] = []  # the hooks timed: ours, or the user's by name
        self.per_backward = 0  # buckets handed over in the last backward
        self.last_count = 0  # buckets of the backward before (the last bucket is known by it)

    def ready(self, nbytes: int) -> None:
        """A bucket was handed to the hook."""
        with self._lock:
            self.buckets += 1
            self.bytes += nbytes
            self.per_backward += 1

    def done(self, ready_ns: int) -> None:
        """A bucket's reduction completed."""
        d = _now() - ready_ns
        with self._lock:
            self.reduced += 1
            self.ready_to_done_ns += d
            self.ready_to_done_max_ns = max(self.ready_to_done_max_ns, d)

    def backward_ended(self) -> None:
        """A backward returned: its bucket count is the next one's guide."""
        with self._lock:
            if self.per_backward:
                self.last_count = self.per_backward
            self.per_backward = 0

    def report(self, steps: int) -> Optional[Dict[str, Any]]:
        """The summary's ddp section; None when no bucket was seen."""
        with self._lock:
            if not self.buckets:
                return None
            return {
                "hooks": list(self.hooks),
                "buckets": self.buckets,
                "buckets_per_step": self.buckets / steps if steps else 0.0,
                "bytes": self.bytes,
                "bytes_per_step": self.bytes / steps if steps else 0.0,
                "reduced": self.reduced,
                "ready_to_done_mean_ns": self.ready_to_done_ns / self.reduced if self.reduced else 0.0,
                "ready_to_done_max_ns": self.ready_to_done_max_ns,
            }


def collective_wrapper(st: Any, orig: Callable) -> Callable:
    """Wrap a collective (or Work.wait) so that the training thread's time
    in it is comm: its own stage when outermost, else carved out of the
    instrumented call around it."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not st.active or st.pub is None or st.ident() != st.thread:
            return orig(*args, **kwargs)
        pub = st.pub
        if st.depth and pub._where is not None and pub._where[0] == COMM:
            # Inside a collective already (all_reduce waits on its Work):
            # that one counts the time, once.
            return orig(*args, **kwargs)
        try:
            outer = st.depth == 0
            # CUDA events around it: the time the stream waits for the
            # collective (NCCL runs it on a stream of its own).
            gpu = pub._gpu.begin() if pub._gpu is not None else None
            t0 = _now()
            prev = pub._where
            st.depth += 1
            pub._where = (COMM, t0)
            if outer:
                st.where = COMM
        except Exception as e:  # noqa: BLE001 - inert on our own failure
            st.fail(e)
            return orig(*args, **kwargs)
        try:
            return orig(*args, **kwargs)
        finally:
            try:
                if outer:
                    st.end(COMM, t0, gpu)
                else:
                    now = _now()
                    st.depth -= 1
                    st.carve += now - t0
                    pub._where = (prev[0] if prev is not None else OTHER, now)
                    if gpu is not None:
                        st.gpu_carves.append((gpu, pub._gpu.begin()))
            except Exception as e:  # noqa: BLE001
                st.fail(e)

    wrapper.__wrapped__ = orig  # type: ignore[attr-defined]
    wrapper.__name__ = getattr(orig, "__name__", "wrapper")
    wrapper.__doc__ = getattr(orig, "__doc__", None)
    return wrapper


def _ready(st: Any, bucket: Any) -> int:
    """A bucket was handed to the hook: count it; returns the time."""
    t0 = _now()
    try:
        buf = bucket.buffer()
        st.buckets.ready(buf.numel() * buf.element_size())
    except Exception:  # noqa: BLE001 - the detail is optional
        pass
    return t0


def _handed(st: Any) -> None:
    """The hook handed its bucket over: the rest of the backward, after the
    last bucket, waits for the other ranks."""
    st.ddp_ready = _now()
    pub, buckets = st.pub, st.buckets
    if pub is not None and buckets.last_count and buckets.per_backward >= buckets.last_count:
        pub._where = (COMM, st.ddp_ready)  # the last bucket: progress frames say comm from here


def _named(hook: Callable, name: str) -> Callable:
    hook.__qualname__ = "pipetop(%s)" % (name,)
    hook.__annotations__ = {}  # DDP checks a hook's annotations against its own types
    return hook


def timed_hook(st: Any, hook: Callable, name: str) -> Callable:
    """Wrap a user's DDP communication hook: note the bucket ready, its
    bytes, when the hook handed it over, and when its future completes (one
    more callback on the future)."""
    st.buckets.hooks.append(name)

    def pipetop_hook(state: Any, bucket: Any) -> Any:
        t0 = _ready(st, bucket)
        fut = hook(state, bucket)
        _handed(st)

        def reduced(f: Any) -> Any:
            st.buckets.done(t0)
            return f.value()

        return fut.then(reduced)

    return _named(pipetop_hook, name)


def _dispatch(ddp: Any, all_reduce: Callable, st: Any) -> Callable:
    """The hook pipetop registers at a DDP module's first forward: DDP's
    default reduction (divide the bucket by the world size, one
    asynchronous all-reduce; all_reduce is the unwrapped one), timed in the
    future's own callback, or the hook the user registers later (DDP takes
    one registration only, so a later one is routed here)."""
    st.buckets.hooks.append("allreduce")
    ref = weakref.ref(ddp)
    buckets = st.buckets

    def pipetop_hook(group: Any, bucket: Any) -> Any:
        m = ref()
        user = getattr(m, "_pipetop_user_hook", None) if m is not None else None
        t0 = _ready(st, bucket)
        if user is not None:
            fut = user[1](user[0], bucket)
            _handed(st)
            return fut.then(lambda f: (buckets.done(t0), f.value())[1])
        g = group if group is not None else st.torch.distributed.group.WORLD
        buf = bucket.buffer()
        buf.div_(g.size())
        fut = all_reduce(buf, group=g, async_op=True).get_future().then(lambda f: (buckets.done(t0), f.value()[0])[1])
        _handed(st)
        return fut

    return _named(pipetop_hook, "allreduce")


def _ddp_forward_wrapper(st: Any, all_reduce: Callable, register: Callable) -> Callable[[Callable], Callable]:
    def wrap(orig: Callable) -> Callable:
        def forward(self: Any, *args: Any, **kwargs: Any) -> Any:
            if st.active and not getattr(self, "_pipetop_seen", False):
                self._pipetop_seen = True
                st.ddp_modules.append(weakref.ref(self))
                if st.skip:  # pipetop bisect's forward phase: no backward comes
                    self.require_backward_grad_sync = False
                if bucket_hook() and not getattr(self, "_pipetop_hooked", False):
                    self._pipetop_hooked = True
                    try:
                        register(self, self.process_group, _dispatch(self, all_reduce, st))
                        self._pipetop_dispatch = True
                    except Exception as e:  # noqa: BLE001 - DDP runs on without the bucket times
                        st.warn("DDP bucket times off: %r" % (e,))
            return orig(self, *args, **kwargs)

        forward.__wrapped__ = orig  # type: ignore[attr-defined]
        return forward

    return wrap


def _register_wrapper(st: Any) -> Callable[[Callable], Callable]:
    def wrap(orig: Callable) -> Callable:
        def register_comm_hook(self: Any, state: Any, hook: Callable) -> Any:
            name = getattr(hook, "__qualname__", "hook")
            if getattr(self, "_pipetop_dispatch", False):
                # pipetop's hook went in at the first forward: route to this one.
                self._check_comm_hook(hook)
                self._pipetop_user_hook = (state, hook)
                st.buckets.hooks.append(name)
                return None
            if getattr(self, "_pipetop_hooked", False) or not st.active:
                return orig(self, state, hook)
            self._pipetop_hooked = True
            return orig(self, state, timed_hook(st, hook, name))

        register_comm_hook.__wrapped__ = orig  # type: ignore[attr-defined]
        return register_comm_hook

    return wrap


def _builtin_wrapper(orig: Callable) -> Callable:
    def _register_builtin_comm_hook(self: Any, *args: Any, **kwargs: Any) -> Any:
        self._pipetop_hooked = True  # a C++ hook: no split, the user's choice stands
        return orig(self, *args, **kwargs)

    _register_builtin_comm_hook.__wrapped__ = orig  # type: ignore[attr-defined]
    return _register_builtin_comm_hook


def patch(torch: Any, patches: Any, st: Any) -> bool:
    """Wrap torch.distributed's collectives, Work.wait and DDP; False (and
    nothing patched) when this torch has no torch.distributed."""
    dist = getattr(torch, "distributed", None)
    if dist is None or not dist.is_available():
        return False
    from torch.distributed import distributed_c10d as c10d
    from torch.nn.parallel import distributed as ddp_mod

    orig_all_reduce = c10d.all_reduce
    for name in COLLECTIVES:
        fn = getattr(c10d, name, None)
        if fn is None:
            continue
        wrapped = collective_wrapper(st, fn)
        patches.set(c10d, name, lambda o, w=wrapped: w)
        if getattr(dist, name, None) is fn:
            patches.set(dist, name, lambda o, w=wrapped: w)
    patches.set(torch._C._distributed_c10d.Work, "wait", lambda o: collective_wrapper(st, o))
    ddp = ddp_mod.DistributedDataParallel
    register = ddp.register_comm_hook
    patches.set(ddp, "forward", _ddp_forward_wrapper(st, orig_all_reduce, register))
    patches.set(ddp, "register_comm_hook", _register_wrapper(st))
    if hasattr(ddp, "_register_builtin_comm_hook"):
        patches.set(ddp, "_register_builtin_comm_hook", _builtin_wrapper)
    if hasattr(ddp, "_sync_buffers"):
        patches.set(ddp, "_sync_buffers", lambda o: collective_wrapper(st, o))
    return True
