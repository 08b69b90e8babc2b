"""Automatic PyTorch instrumentation: publish any training loop to pipetop
without changing it.

    python -m pipetop_publish.auto train.py [ARGS...]
    python -m pipetop_publish.auto -m package.module [ARGS...]

or ``pipetop run -- python train.py``, which puts this package on the path
with a ``sitecustomize`` bootstrap. When ``torch`` is imported, a few of its
functions are wrapped (nothing else changes, and nothing at all when torch is
never imported):

=============  ==========================================================
stage          time spent inside
=============  ==========================================================
data_wait      ``__next__`` of a DataLoader iterator
h2d            ``Tensor.to``/``Tensor.cuda`` that moves a tensor to another device
               (back to the host, ``.to("cpu")`` is sync)
preprocess     the outermost ``nn.Module.__call__`` of a module without
               parameters, with gradients on, before the model's forward in
               the step: transforms and augmentation in the loop
               (torchvision's are modules); under ``no_grad`` (a frozen
               encoder applied to the batch) it stays forward
forward        the outermost ``nn.Module.__call__``
backward       ``Tensor.backward`` / ``torch.autograd.backward``
optim          ``Optimizer.step`` and ``Optimizer.zero_grad``
sync           ``Tensor.item``/``.cpu``/``.tolist``, ``torch.cuda.synchronize``
eval           any of the above while gradients are off (``torch.no_grad``)
               outside a training step; inside one (after its training
               batch or a forward/backward with gradients, before its
               optimizer step) a call under ``no_grad`` -- a frozen
               encoder -- keeps its own stage
other          the rest of the step
=============  ==========================================================

Only the outermost instrumented call counts (``.item()`` inside a forward is
forward time). A step ends when the loop comes back for more work (the next
batch, forward or backward) after at least one ``Optimizer.step`` returned, so
gradient accumulation gives one step per optimizer step and two optimizers
stepped in one iteration give one step. ``PIPETOP_AUTO=0`` switches all of
this off. Any failure inside the instrumentation switches it off and says so
once on stderr; the user's run goes on.
"""

from __future__ import annotations

import _thread
import atexit
import importlib.abc
import importlib.machinery
import os
import runpy
import sys
import time
import weakref
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import bisect as _bisect
from . import comm as _comm
from . import h5watch as _h5watch
from . import hotcode as _hotcode
from . import plan as _plan
from . import readshare as _readshare
from . import stacks as _stacks
from . import stageword as _stageword
from . import summary as _summary
from . import videowatch as _videowatch
from . import workers as _workers
from . import zarrwatch as _zarrwatch
from .stages import BACKWARD, CANONICAL, CLASSES, COMM, DATA_WAIT, EVAL, FORWARD, H2D, OPTIM, OTHER, PREPROCESS, SYNC

__all__ = ["enabled", "install", "main", "state"]

_now = time.perf_counter_ns
_ident = _thread.get_ident

# The stages this instrumentation times: every canonical one (other is
# the step's untimed rest) and eval, which replaces every other stage while
# gradients are off.
_STAGES = tuple(n for n in CANONICAL if n != OTHER) + (EVAL,)


def enabled() -> bool:
    """Report whether PIPETOP_AUTO allows the instrumentation (default on)."""
    return os.environ.get("PIPETOP_AUTO", "1").strip().lower() not in ("0", "false", "no", "off")


class _State:
    """The instrumentation's bookkeeping for the training thread of one
    process. Everything here runs on that thread only, except the loader
    sampler thread, which only reads."""

    def __init__(self) -> None:
        self.active = False  # the wrappers record (False: pass straight through)
        self.thread = 0  # ident of the thread that records
        self.depth = 0  # instrumented calls open on that thread
        self.pub: Any = None
        self.torch: Any = None
        self.grad_enabled: Callable[[], bool] = lambda: True  # torch.is_grad_enabled once torch is here
        self.pending = False  # an optimizer stepped: the step ends at the next work
        # A training step is open: a training batch, or a forward or
        # backward with gradients on, came since the last optimizer step.
        # Calls under no_grad inside it (a frozen encoder) are not eval.
        self.in_step = False
        # A module with parameters (the model) ran in this step: modules
        # called after it are forward, never preprocess.
        self.model_ran = False
        self.pending_end = 0
        self.samples = 0
        self.loss: Any = None
        self.idx: Dict[str, int] = {}
        self.loader: Any = None  # weakref to the training DataLoader iterator
        self.loader_id = 0
        self.loader_info: Any = None  # the statistics of that iterator, kept after it is gone
        self.failed = False
        self.sampler: Optional[_workers.Sampler] = None
        self.hotcode: Optional[_hotcode.Collector] = None
        # The stage of the outermost instrumented call open now (None:
        # outside them, the step's other); read by the stack sampler, and
        # by pipetop's from outside (stageword).
        self._where: Optional[str] = None
        self.ident = _ident
        # Comm inside the open outermost call (a collective in a forward),
        # taken out of its stage when it ends.
        self.carve = 0
        # When a DDP hook last handed a gradient bucket over: the rest of
        # the backward waits for the other ranks.
        self.ddp_ready = 0
        # With CUDA event timing: the event recorded when this rank's
        # gradients were all launched (the GPU side of ddp_ready), and the
        # event pairs of collectives inside the open outermost call.
        self.gpu_ready: Any = None
        self.gpu_carves: List[Any] = []
        self.buckets = _comm.Buckets()
        self.ddp_modules: List[Any] = []  # weakrefs to the DDP modules seen in a forward
        self.warned: set = set()
        # pipetop bisect's hooks (bisect.py; all off without a phase): the
        # iterator whose __next__ is served by divert() instead, what sees
        # each training batch (watch) and the optimizer steps (on_step),
        # and whether backward and optimizer steps are skipped.
        self.divert_it: Any = None
        self.divert: Optional[Callable[[], Any]] = None
        self.watch: Optional[Callable[[Any, Any], None]] = None
        self.on_step: Optional[Callable[[], None]] = None
        self.skip = False

    @property
    def where(self) -> Optional[str]:
        """The stage of the outermost instrumented call open now."""
        return self._where

    @where.setter
    def where(self, name: Optional[str]) -> None:
        self._where = name
        _stageword.set_stage(name)

    # -- the hot path ---------------------------------------------------------

    def end(self, name: str, t0: int, gpu: Any = None) -> None:
        """Close the outermost instrumented call begun at t0 as stage name;
        the comm inside it (collectives, the DDP wait at the end of a
        backward) counts as comm."""
        now = _now()
        d = now - t0
        self.depth -= 1
        self.where = None
        pub = self.pub
        pub._where = (OTHER, now)
        carve = self.carve
        ready = self.gpu_ready if name == BACKWARD and self.ddp_ready > t0 else None
        if name == BACKWARD and self.ddp_ready > t0:
            carve += now - self.ddp_ready
            self.buckets.backward_ended()
        self.carve = self.ddp_ready = 0
        if self.stage_of(name) == EVAL:
            name, carve = EVAL, 0
        if carve and name != COMM:
            carve = min(carve, d)
            d -= carve
            self._add(COMM, carve)
        i = self._add(name, d)
        if pub._gpu is not None:
            self._end_gpu(gpu if i >= 0 else None, i, ready)

    def stage_of(self, name: str) -> str:
        """The stage a call of stage name counts as: eval while gradients
        are off outside a training step (a validation pass); inside one, a
        call under no_grad (a frozen encoder) keeps its stage."""
        if self.in_step or name == OPTIM or self.grad_enabled():
            return name
        return EVAL

    def _end_gpu(self, start: Any, i: int, ready: Any) -> None:
        """The GPU side of end: the outermost call's event pair (begun at
        start, None: not timed) counts to stage i, the part after ready
        (DDP's gradients launched) and the collectives inside it to comm."""
        g, carves = self.pub._gpu, self.gpu_carves
        self.gpu_ready, self.gpu_carves = None, []
        comm = self._add(COMM, 0) if ready is not None or carves else -1
        if start is not None and ready is not None and comm >= 0:
            g.split(start, ready, i, comm)
        elif start is not None:
            g.end(start, i)
        for s, e in carves:
            if comm >= 0:
                g.carve(s, e, comm, i if start is not None else -1)

    def _add(self, name: str, d: int) -> int:
        """Count d ns to stage name of the step; its index (-1: no room)."""
        i = self.idx.get(name)
        if i is None or self.pub._names[i] != name:
            i = self._index(name)
            if i < 0:
                return i
        self.pub._cpu[i] += d
        return i

    def _index(self, name: str) -> int:
        pub = self.pub
        if name not in pub._index:
            pub._add_stage(name)
        self.idx = dict(pub._index)
        return self.idx.get(name, -1)

    def work(self, from_loader: bool) -> None:
        """Called when the loop asks for more work (from_loader: the next
        batch; else a forward or backward). A pending step ends at the next
        training batch, or, in a loop without a training DataLoader, at the
        next forward or backward with gradients on; evaluation never ends one."""
        if self.pub is None:
            self._start()
        if self.pending and self.grad_enabled() and (from_loader or self.loader_id == 0):
            self.pending = False
            self.pub._end_step(_now(), self.samples, self.loss)
            self.model_ran = False
            self.samples = 0
            self.loss = None
        elif self.pub._step_start is None:
            self.pub._step_start = _now()

    def stepped(self) -> None:
        """An optimizer step returned."""
        if self.pub is None:
            return
        self.pending = True
        self.in_step = False
        self.pending_end = _now()
        if self.on_step is not None:
            self.on_step()

    # -- lifecycle --------------------------------------------------------------

    def _start(self) -> None:
        from .publisher import Publisher

        torch = self.torch
        cuda = False
        try:
            cuda = bool(torch.cuda.is_available() and torch.cuda.is_initialized())
        except Exception:  # noqa: BLE001 - a broken CUDA setup means CPU times
            cuda = False
        name = run_name()
        config = {"auto": True, "argv": sys.argv[:8], "torch": getattr(torch, "__version__", "?")}
        if _bisect.active is not None:
            config["bisect_phase"] = _bisect.active.label or _bisect.active.name
        word = _stageword.setup(tuple(n for n in CLASSES if n != OTHER)) if _stacks.hz() > 0 else None
        self.pub = Publisher(name=name, config=config,
                             stages=_STAGES, cuda=cuda, stage_word=word)
        self.idx = dict(self.pub._index)
        self.sampler = _workers.Sampler(self.pub, self._current_loader)
        self.sampler.start()
        self.hotcode = _hotcode.Collector(self.pub, self.thread, self._where_now, _stacks.hz())
        self.hotcode.start()
        if _bisect.active is not None:
            _bisect.active.begin(self.pub)

    def _where_now(self) -> str:
        """The stage the training thread is in, for its stack samples."""
        return self.where or OTHER

    def follow(self, it: Any) -> None:
        """Make iterator it the training loader (its statistics reported)."""
        self.loader, self.loader_id, self.loader_info = weakref.ref(it), id(it), getattr(it, "_pipetop", None)

    def _current_loader(self) -> Tuple[Any, Any]:
        """The training loader's iterator (None once gone) and statistics."""
        it = self.loader() if self.loader is not None else None
        return it, self.loader_info

    def finish(self) -> None:
        """End of the run: close the last step, print and write the summary."""
        if not self.active or self.pub is None or os.getpid() != self.pub._pid:
            return
        self.active = False
        try:
            if self.pending:
                self.pending = False
                self.pub._end_step(self.pending_end, self.samples, self.loss)
            code = None
            if self.hotcode is not None:
                self.hotcode.stop()
                code = self.hotcode.final()
            loader = self.sampler.final() if self.sampler is not None else None
            if self.sampler is not None:
                self.sampler.stop()
            if loader is not None:
                self.pub.loader(loader)
            ddp = self.buckets.report(self.pub._step_no) or _comm.ddp_report(self.ddp_modules, self.pub._step_no)
            _summary.finish(self.pub, loader, code, ddp)
        except Exception as e:  # noqa: BLE001 - never fail the user's exit
            sys.stderr.write("pipetop: run summary failed: %r\n" % (e,))

    def warn(self, msg: str) -> None:
        """Say msg once on stderr (a part of the instrumentation is off)."""
        if msg not in self.warned:
            self.warned.add(msg)
            sys.stderr.write("pipetop: %s\n" % (msg,))

    def fail(self, err: BaseException) -> None:
        """Switch the instrumentation off after an internal error."""
        self.active = False
        if not self.failed:
            self.failed = True
            sys.stderr.write("pipetop: automatic instrumentation switched off after an internal error: %r\n" % (err,))


state = _State()


def run_name() -> str:
    """The trainer name: $PIPETOP_NAME, else the script's base name."""
    name = os.environ.get("PIPETOP_NAME", "").strip()
    if name:
        return name
    argv0 = sys.argv[0] if sys.argv and sys.argv[0] else "python"
    base = os.path.basename(argv0)
    if base.endswith(".py"):
        base = base[:-3]
    if base in ("", "-c", "-m", "__main__"):
        base = "python"
    return base


# ---------------------------------------------------------------------------
# Wrappers


def _module_stage(args: Tuple[Any, ...]) -> str:
    """The stage of an outermost nn.Module call: preprocess for a module
    without parameters called with gradients on before the model ran in
    the step (a transform, augmentation); else forward (the model, a loss
    after it, a frozen encoder under no_grad)."""
    st = state
    if st.model_ran or not args or not st.grad_enabled():
        return FORWARD
    for _ in args[0].parameters():
        st.model_ran = True
        return FORWARD
    return PREPROCESS


def _timed(orig: Callable, name: str, opens_work: bool = False, cuda_events: bool = False,
           pick: Optional[Callable[[Tuple[Any, ...]], str]] = None) -> Callable:
    """Wrap orig so that its outermost calls on the training thread count as
    stage name (or the stage pick names from the call's arguments).
    opens_work: the call asks for more work (ends a pending step)."""
    st = state

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not st.active or st.depth or _ident() != st.thread:
            return orig(*args, **kwargs)
        try:
            pub = st.pub
            if opens_work:
                if st.pending or pub is None or pub._step_start is None:
                    st.work(False)
                    pub = st.pub
            elif pub is None:
                return orig(*args, **kwargs)
            if opens_work and not st.in_step and st.grad_enabled():
                st.in_step = True
            stage = name if pick is None else pick(args)
            gpu = pub._gpu.begin() if cuda_events and pub._gpu is not None else None
            st.depth += 1
            st.where = st.stage_of(stage)
            t0 = _now()
            pub._where = (st.where, t0)
        except Exception as e:  # noqa: BLE001 - inert on our own failure
            st.fail(e)
            return orig(*args, **kwargs)
        try:
            return orig(*args, **kwargs)
        finally:
            try:
                st.end(stage, t0, gpu)
            except Exception as e:  # noqa: BLE001
                st.fail(e)

    wrapper.__wrapped__ = orig  # type: ignore[attr-defined]
    wrapper.__name__ = getattr(orig, "__name__", "wrapper")
    wrapper.__doc__ = getattr(orig, "__doc__", None)
    return wrapper


def _next_wrapper(orig: Callable) -> Callable:
    """DataLoader iterator __next__: data_wait, and counts samples."""
    st = state

    def __next__(self: Any) -> Any:
        if not st.active or st.depth or _ident() != st.thread:
            return orig(self) if self is not st.divert_it else st.divert()
        try:
            pub = st.pub
            if st.pending or pub is None or pub._step_start is None:
                st.work(True)
            st.depth += 1
            st.where = DATA_WAIT if st.grad_enabled() else EVAL
            t0 = _now()
            if st.pub is not None:
                st.pub._where = (st.where, t0)
        except Exception as e:  # noqa: BLE001
            st.fail(e)
            return orig(self) if self is not st.divert_it else st.divert()
        batch = None
        try:
            batch = orig(self) if self is not st.divert_it else st.divert()
            return batch
        finally:
            try:
                st.end(DATA_WAIT, t0)
                if batch is not None and st.grad_enabled():
                    st.in_step = True
                    st.model_ran = False
                    st.samples += _batch_len(batch)
                    info = getattr(self, "_pipetop", None)
                    # A new iterator may get a freed one's id (the next
                    # epoch's, without persistent workers): its own
                    # statistics tell it apart.
                    if id(self) != st.loader_id or info is not st.loader_info:
                        st.loader, st.loader_id, st.loader_info = weakref.ref(self), id(self), info
                    if st.watch is not None:
                        st.watch(self, batch)
                    if info is not None:
                        info.batches += 1
                        info.last = _now()
                        if not info.first:
                            info.first = info.last
                            _workers.started(info)
            except Exception as e:  # noqa: BLE001
                st.fail(e)

    __next__.__wrapped__ = orig  # type: ignore[attr-defined]
    return __next__


def move_stage(src: Any, dst: Any) -> str:
    """The stage of a copy from device src to device dst: back to the host
    is sync (it waits for the device, like .cpu()), anything else h2d."""
    return SYNC if dst.type == "cpu" and src.type != "cpu" else H2D


def _to_wrapper(orig: Callable) -> Callable:
    """Tensor.to / Tensor.cuda: h2d when the result is on another device,
    sync when it comes back to the host."""
    st = state

    def to(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not st.active or st.depth or st.pub is None or _ident() != st.thread:
            return orig(self, *args, **kwargs)
        t0 = _now()
        st.depth += 1
        st.where = _move_guess(self, args, kwargs, st.torch)
        try:
            out = orig(self, *args, **kwargs)
        finally:
            st.depth -= 1
            st.where = None
        try:
            if out is not self and out.device != self.device:
                st.depth += 1
                st.end(move_stage(self.device, out.device), t0)
        except Exception as e:  # noqa: BLE001
            st.fail(e)
        return out

    to.__wrapped__ = orig  # type: ignore[attr-defined]
    to.__name__ = getattr(orig, "__name__", "to")
    to.__doc__ = getattr(orig, "__doc__", None)
    return to


def _move_guess(t: Any, args: Tuple[Any, ...], kwargs: Dict[str, Any], torch: Any) -> Optional[str]:
    """The stage a Tensor.to / Tensor.cuda call in progress will likely
    count as, for its stack samples: a device argument (or .cuda) names a
    copy; a dtype conversion is none (the step's other)."""
    dev = kwargs.get("device")
    if dev is None and args and isinstance(args[0], (str, torch.device)):
        dev = args[0]
    if dev is None:
        return H2D if not args and not kwargs else None  # .cuda() with no argument
    try:
        if str(dev).startswith("cpu"):
            return SYNC if t.device.type != "cpu" else None
        return H2D
    except Exception:  # noqa: BLE001 - a guess only
        return None


def _backward_wrapper(orig: Callable, keeps_loss: bool) -> Callable:
    """Tensor.backward (keeps_loss: also keeps a scalar loss for the step
    record) and torch.autograd.backward: backward time. Under DDP the root
    tensor (the first of several) carries the hook that splits this rank's
    own compute from the wait for the other ranks."""
    timed = _timed(orig, BACKWARD, opens_work=True, cuda_events=True)
    skipped = _timed(_bisect.skipped_backward, BACKWARD, opens_work=True)

    def backward(tensors: Any, *args: Any, **kwargs: Any) -> Any:
        st = state
        if st.skip and st.active and not st.depth and _ident() == st.thread:
            return skipped(tensors, *args, **kwargs)  # bisect's forward phase
        armed = None
        if st.active and not st.depth and _ident() == st.thread:
            try:
                root = tensors[0] if isinstance(tensors, (list, tuple)) else tensors
                if keeps_loss and root.dim() == 0:
                    st.loss = root  # read (detached) when the step ends
                if st.ddp_modules and st.grad_enabled():
                    armed = _comm.arm(st, root)
            except Exception:  # noqa: BLE001 - the loss and the split are optional
                pass
        try:
            return timed(tensors, *args, **kwargs)
        finally:
            if armed is not None:
                armed.remove()

    backward.__wrapped__ = orig  # type: ignore[attr-defined]
    backward.__doc__ = getattr(orig, "__doc__", None)
    return backward


def _step_wrapper(orig: Callable) -> Callable:
    """Optimizer.step: optim time; the step ends once the loop wants more work."""
    timed = _timed(orig, OPTIM, cuda_events=True)
    skipped = _timed(_bisect.skipped_step, OPTIM)
    st = state

    def step(*args: Any, **kwargs: Any) -> Any:
        outer = st.active and not st.depth and _ident() == st.thread
        out = (skipped if outer and st.skip else timed)(*args, **kwargs)
        if outer and st.active:
            st.stepped()
        return out

    step.__wrapped__ = orig  # type: ignore[attr-defined]
    step._pipetop = True  # type: ignore[attr-defined]
    step.__name__ = getattr(orig, "__name__", "step")
    step.__doc__ = getattr(orig, "__doc__", None)
    for attr in ("hooked",):
        if hasattr(orig, attr):
            setattr(step, attr, getattr(orig, attr))
    return step


def _batch_len(batch: Any) -> int:
    """Leading dimension of a batch (a tensor, or the first one inside a
    tuple, list, dict, dataclass or other object's attributes); 0 when
    unknown."""
    for _ in range(4):
        shape = getattr(batch, "shape", None)
        if shape is not None:
            return int(shape[0]) if len(shape) else 0
        if isinstance(batch, (list, tuple)) and batch:
            batch = batch[0]
        elif isinstance(batch, dict) and batch:
            batch = next(iter(batch.values()))
        elif isinstance(getattr(batch, "__dict__", None), dict) and batch.__dict__:
            batch = next(iter(batch.__dict__.values()))
        else:
            return 0
    return 0


# ---------------------------------------------------------------------------
# Patching


class _Patches:
    """Records every attribute it replaces, so that a failure half-way
    restores the originals (all or nothing)."""

    def __init__(self) -> None:
        self.done: List[Tuple[Any, str, Any]] = []

    def set(self, obj: Any, attr: str, wrap: Callable[[Any], Any]) -> None:
        orig = obj.__dict__[attr] if attr in getattr(obj, "__dict__", {}) else getattr(obj, attr)
        setattr(obj, attr, wrap(orig))
        self.done.append((obj, attr, orig))

    def undo(self) -> None:
        for obj, attr, orig in reversed(self.done):
            try:
                setattr(obj, attr, orig)
            except Exception:  # noqa: BLE001
                pass
        self.done.clear()


_patches = _Patches()
_comm_patches = _Patches()


def _patch_torch(torch: Any) -> None:
    """Wrap the torch functions the stages are made of."""
    from torch.utils.data import dataloader as dl

    p = _patches
    p.set(dl.DataLoader, "__init__", _plan.init_wrapper)
    p.set(dl._BaseDataLoaderIter, "__next__", _next_wrapper)
    p.set(dl._BaseDataLoaderIter, "__init__", _workers.iter_init_wrapper)
    p.set(dl._MultiProcessingDataLoaderIter, "__init__", lambda orig: _workers.mp_init_wrapper(orig, lambda: state.active))
    _workers.patch_fetchers(p)
    p.set(torch.nn.Module, "__call__", lambda o: _timed(o, FORWARD, opens_work=True, cuda_events=True, pick=_module_stage))
    p.set(torch.Tensor, "backward", lambda o: _backward_wrapper(o, keeps_loss=True))
    p.set(torch.autograd, "backward", lambda o: _backward_wrapper(o, keeps_loss=False))
    p.set(torch.Tensor, "to", _to_wrapper)
    p.set(torch.Tensor, "cuda", _to_wrapper)
    for meth in ("item", "cpu", "tolist"):
        p.set(torch.Tensor, meth, lambda o: _timed(o, SYNC))
    p.set(torch.cuda, "synchronize", lambda o: _timed(o, SYNC))
    p.set(torch.optim.Optimizer, "zero_grad", lambda o: _timed(o, OPTIM))
    p.set(torch.optim.Optimizer, "__init__", _optimizer_init_wrapper)


def _optimizer_init_wrapper(orig: Callable) -> Callable:
    """Optimizer.__init__: wraps the subclass's step (and an overridden
    zero_grad) once per class, the way torch's own profiler hook does."""

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        orig(self, *args, **kwargs)
        try:
            cls = type(self)
            for klass in cls.__mro__:
                if klass.__dict__.get("step") is not None and not getattr(klass.__dict__["step"], "_pipetop", False):
                    _patches.set(klass, "step", _step_wrapper)
                if klass is state.torch.optim.Optimizer:
                    break
                z = klass.__dict__.get("zero_grad")
                if z is not None and not hasattr(z, "__wrapped__"):
                    _patches.set(klass, "zero_grad", lambda o: _timed(o, OPTIM))
        except Exception as e:  # noqa: BLE001
            state.fail(e)

    __init__.__wrapped__ = orig  # type: ignore[attr-defined]
    return __init__


def _on_torch(torch: Any) -> None:
    """torch was just imported: patch it and start recording."""
    if state.torch is not None:
        return
    try:
        state.torch = torch
        state.grad_enabled = torch.is_grad_enabled
        _patch_torch(torch)
    except Exception as e:  # noqa: BLE001 - an unknown torch: stay out of the way
        _patches.undo()
        sys.stderr.write("pipetop: torch %s not instrumented: %r\n" % (getattr(torch, "__version__", "?"), e))
        return
    try:
        if _comm.enabled():
            _comm.patch(torch, _comm_patches, state)
    except Exception as e:  # noqa: BLE001 - the rest of the stages still work
        _comm_patches.undo()
        sys.stderr.write("pipetop: torch.distributed %s not instrumented (no comm stage): %r\n" % (getattr(torch, "__version__", "?"), e))
    try:
        _start_bisect(torch)
    except Exception as e:  # noqa: BLE001 - no phase: the run as it is
        sys.stderr.write("pipetop: bisect phase off: %r\n" % (e,))
    try:
        _plan.start(torch, os.environ, _patches, _training_site)
    except Exception as e:  # noqa: BLE001 - no plan: the run as it is
        sys.stderr.write("pipetop: plan off: %r\n" % (e,))
    state.thread = _ident()
    state.active = True
    atexit.register(state.finish)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_forked)


def _start_bisect(torch: Any) -> None:
    """Arm the pipetop bisect phase $PIPETOP_BISECT_PHASE names, if any."""
    phase = _bisect.from_env(os.environ)
    if phase is None:
        return
    _patches.set(_bisect.Replay, "__next__", _next_wrapper)
    _bisect.active = phase
    phase.attach(state, _patches, _batch_len)


def _training_site() -> Optional[Tuple[str, int]]:
    """The creation site of the training loader (the one whose batch an
    optimizer step followed); None before that step, or when unknown."""
    pub = state.pub
    if pub is None or not (state.pending or pub._step_no) or state.loader_info is None:
        return None
    return state.loader_info.site


def _reads_counter(what: str, patch: Callable[[Any, _Patches], Any],
                   shared: Optional[Callable[[], Any]] = None) -> Callable[[Any], None]:
    """The import hook of a data library whose reads a watcher module
    counts (zarrwatch, h5watch, videowatch): patch(module, patches) runs
    once, on its first import; a version the watcher does not know is
    left alone (patch returns False, or raises: then what it patched is
    undone), with one stderr line saying so. shared, when given, makes
    the watcher's readshare format: its per-read wrappers are then put in
    and out in shares of the time."""
    patches = _Patches()

    def on_import(module: Any) -> None:
        if patches.done:
            return
        version = getattr(module, "__version__", "?")
        try:
            if patch(module, patches) is False:
                sys.stderr.write("pipetop: %s %s reads not counted: unknown version or classes\n" % (what, version))
                return
        except Exception as e:  # noqa: BLE001 - an unexpected library: stay out of the way
            patches.undo()
            sys.stderr.write("pipetop: %s %s reads not counted: %r\n" % (what, version, e))
            return
        if shared is not None:
            _readshare.switch.register(shared())

    return on_import


_on_zarr = _reads_counter("zarr", _zarrwatch.patch)
_on_h5py = _reads_counter("h5py", _h5watch.patch, _h5watch.share_format)
_on_av = _reads_counter("PyAV", _videowatch.patch, _videowatch.share_format)


def _forked() -> None:
    """A forked child (a DataLoader worker, a user's fork) records nothing."""
    state.active = False


class _ImportHook(importlib.abc.MetaPathFinder):
    """Finds one module (torch, zarr, h5py, av) with the other finders and arranges
    for on_import to run on it as soon as it has been executed."""

    def __init__(self, name: str, on_import: Callable[[Any], None]) -> None:
        self.name = name
        self.on_import = on_import

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.machinery.PathFinder.find_spec(fullname, path)
            if spec is None or spec.loader is None:
                for finder in sys.meta_path:
                    find = getattr(finder, "find_spec", None)
                    if find is not None:
                        spec = find(fullname, path, target)
                        if spec is not None:
                            break
        except Exception:  # noqa: BLE001
            return None
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _PatchingLoader(spec.loader, self.on_import)
        return spec


class _PatchingLoader(importlib.abc.Loader):
    """Delegates to the module's loader, then patches the fresh module."""

    def __init__(self, inner: Any, on_import: Callable[[Any], None]) -> None:
        self._inner = inner
        self._on_import = on_import

    def create_module(self, spec: Any) -> Any:
        return self._inner.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._inner.exec_module(module)
        self._on_import(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def install() -> bool:
    """Instrument torch when it is (or has been) imported; returns False
    when PIPETOP_AUTO switches the instrumentation off."""
    if not enabled():
        return False
    for name, on_import in (("torch", _on_torch), ("zarr", _on_zarr), ("h5py", _on_h5py), ("av", _on_av)):
        if name in sys.modules:
            on_import(sys.modules[name])
        elif not any(isinstance(f, _ImportHook) and f.name == name for f in sys.meta_path):
            sys.meta_path.insert(0, _ImportHook(name, on_import))
    return True


# ---------------------------------------------------------------------------
# python -m pipetop_publish.auto


_USAGE = """usage: python -m pipetop_publish.auto SCRIPT.py [ARGS...]
       python -m pipetop_publish.auto -m MODULE [ARGS...]

Runs a PyTorch training script with automatic pipetop instrumentation (no
code changes): watch it with `pipetop`. PIPETOP_AUTO=0 runs it plain;
PIPETOP_NAME names the trainer (default: the script's name);
PIPETOP_STACKS_HZ sets the stack samples (default 100 a second, 0 off).
"""


def boot_dir() -> str:
    """The directory whose sitecustomize.py switches the instrumentation on
    in every Python process started with it on PYTHONPATH."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "_boot")


def main(argv: Optional[List[str]] = None) -> None:
    """Run a script or module (argv[0], or ``-m MODULE``) instrumented."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        sys.stdout.write(_USAGE)
        sys.exit(0 if args else 2)
    # Child Python processes (spawned loader workers, subprocesses) get the
    # same instrumentation through the bootstrap on their path.
    pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = [boot_dir(), pkg_parent] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    install()
    if args[0] == "-m":
        if len(args) < 2:
            sys.stderr.write(_USAGE)
            sys.exit(2)
        sys.argv = args[1:]
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
        return
    sys.argv = args
    sys.path[0] = os.path.dirname(os.path.abspath(args[0]))
    runpy.run_path(args[0], run_name="__main__")


if __name__ == "__main__":
    # Run the imported module's main, not this __main__ copy's: the patches
    # and the state must live in pipetop_publish.auto, which the rest of the
    # package imports.
    from pipetop_publish.auto import main as _main

    _main()
