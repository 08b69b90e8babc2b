"""Callbacks for training frameworks that own the loop: PyTorch Lightning
and Hugging Face ``transformers.Trainer``. Both publish the canonical
stages from the framework's own hooks, with no other change to the script:

    trainer = lightning.Trainer(callbacks=[pipetop_publish.integrations.lightning_callback()])
    trainer = transformers.Trainer(..., callbacks=[pipetop_publish.integrations.hf_callback()])

Neither framework is a dependency: each factory imports its framework when
called and raises ImportError naming the package when it is missing.
Creating a callback switches the automatic instrumentation off in this
process (the framework's hooks are the better source inside its loop).
"""

from __future__ import annotations

import time
from typing import Any, Optional

from .publisher import Publisher
from .stages import BACKWARD, DATA_WAIT, EVAL, FORWARD, OPTIM, OTHER

__all__ = ["Timeline", "hf_callback", "lightning_callback"]


class Timeline:
    """Attributes the time between hook calls to stages: ``mark(stage)``
    charges the time since the previous mark to ``stage``; ``step()`` ends
    the step. Only the training thread may call it."""

    def __init__(self, pub: Publisher) -> None:
        self.pub = pub
        self._last: Optional[int] = None

    def mark(self, stage: str) -> None:
        """Charge the time since the previous mark to stage."""
        now = time.perf_counter_ns()
        pub = self.pub
        if pub._step_start is None:
            pub._step_start = now
        if self._last is not None:
            i = pub._index.get(stage)
            if i is None:
                i = pub._add_stage(stage)
            if i >= 0:
                pub._cpu[i] += now - self._last
        self._last = now

    def step(self, samples: int = 0, loss: Any = None) -> None:
        """End the step at the last mark."""
        self.pub._end_step(self._last if self._last is not None else time.perf_counter_ns(), samples, loss)


def _publisher(name: Optional[str]) -> Publisher:
    from . import auto

    auto.state.active = False  # the callback's hooks replace the patches
    return Publisher(name=name or auto.run_name(), config={"integration": True})


def _batch_size(batch: Any) -> int:
    from .auto import _batch_len

    return _batch_len(batch)


class LightningHooks:
    """The hook methods of the Lightning callback (mixed into a subclass of
    ``lightning.pytorch.Callback`` by lightning_callback)."""

    def __init__(self, name: Optional[str] = None) -> None:
        self._name = name
        self._tl: Optional[Timeline] = None

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        if self._tl is None:
            self._tl = Timeline(_publisher(self._name))
        self._tl.mark(OTHER)

    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int) -> None:
        if self._tl is not None:
            self._tl.mark(DATA_WAIT)

    def on_before_backward(self, trainer: Any, pl_module: Any, loss: Any) -> None:
        if self._tl is not None:
            self._tl.mark(FORWARD)
            self._loss = loss

    def on_after_backward(self, trainer: Any, pl_module: Any) -> None:
        if self._tl is not None:
            self._tl.mark(BACKWARD)

    def on_before_optimizer_step(self, trainer: Any, pl_module: Any, optimizer: Any, *args: Any) -> None:
        if self._tl is not None:
            self._tl.mark(OTHER)

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int, *args: Any) -> None:
        if self._tl is not None:
            self._tl.mark(OPTIM)
            self._tl.step(samples=_batch_size(batch), loss=getattr(self, "_loss", None))
            self._loss = None

    def on_validation_start(self, trainer: Any, pl_module: Any) -> None:
        if self._tl is not None:
            self._tl.mark(OTHER)

    def on_validation_end(self, trainer: Any, pl_module: Any) -> None:
        if self._tl is not None:
            self._tl.mark(EVAL)

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        if self._tl is not None:
            self._tl.pub.close()


class HFHooks:
    """The hook methods of the Hugging Face callback (mixed into a subclass
    of ``transformers.TrainerCallback`` by hf_callback). The Trainer has no
    hook between forward and backward: both count as forward."""

    def __init__(self, name: Optional[str] = None) -> None:
        self._name = name
        self._tl: Optional[Timeline] = None

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._tl is None:
            self._tl = Timeline(_publisher(self._name))
        self._tl.mark(OTHER)

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._tl is not None:
            self._tl.mark(DATA_WAIT)

    def on_substep_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._tl is not None:
            self._tl.mark(FORWARD)

    def on_pre_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._tl is not None:
            self._tl.mark(FORWARD)

    def on_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._tl is not None:
            self._tl.mark(OPTIM)

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._tl is not None:
            self._tl.mark(OPTIM)
            batch = getattr(args, "per_device_train_batch_size", 0) * getattr(args, "gradient_accumulation_steps", 1)
            self._tl.step(samples=int(batch or 0))

    def on_evaluate(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._tl is not None:
            self._tl.mark(EVAL)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._tl is not None:
            self._tl.pub.close()


def lightning_callback(name: Optional[str] = None) -> Any:
    """A Lightning ``Callback`` publishing the run to pipetop. Imports
    ``lightning`` (or the older ``pytorch_lightning``); ImportError without."""
    try:
        from lightning.pytorch import Callback
    except ImportError:
        try:
            from pytorch_lightning import Callback
        except ImportError as e:
            raise ImportError("pipetop: lightning_callback needs the lightning package (pip install lightning)") from e
    cls = type("PipetopCallback", (LightningHooks, Callback), {})
    return cls(name)


def hf_callback(name: Optional[str] = None) -> Any:
    """A ``transformers.TrainerCallback`` publishing the run to pipetop;
    ImportError without transformers."""
    try:
        from transformers import TrainerCallback
    except ImportError as e:
        raise ImportError("pipetop: hf_callback needs the transformers package (pip install transformers)") from e
    cls = type("PipetopCallback", (HFHooks, TrainerCallback), {})
    return cls(name)
