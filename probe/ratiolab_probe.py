"""ratiolab_probe — what a DeepSpeed ZeRO-3 run really did, for `ratiolab validate --probe`.

Add two lines to a training script, after `deepspeed.initialize`:

    import ratiolab_probe
    probe = ratiolab_probe.attach(engine, out="probe.json", digest_step=3)

Each rank writes one JSON document (schema: docs/json-probe.md; "{rank}" in `out` is replaced by
the rank, otherwise ranks other than 0 write `<out stem>.rank<R>.json`). It is read from the live
objects: DeepSpeed's and torch's versions, the effective ZeRO configuration, every sub-group of
the ZeRO-3 optimizer (element count, param group, the device DeepSpeed assigned it, where its
fp32 master and its Adam state live and which optimizer holds that state), the bytes of those
tensors, device memory after initialisation and its peak per step (torch.cuda on a GPU, the
process RSS on the CPU accelerator, labelled), host RSS and locked memory, the wall time of every
step, DeepSpeed's wall-clock-breakdown timers when they are on, and a SHA-256 digest of the fp32
master weights after a chosen step.

It never changes the run's numerics: it reads tensors (never writes them), keeps no reference
that would change when memory is freed, and calls nothing that synchronises streams during a
step. The work it does inside a step (a clock read and a read of /proc/self/status per step, a
reset of the peak counters) is timed by the probe itself and written as `probe_overhead_ns` (wall
time, which on a loaded machine includes the probe being preempted) and `probe_overhead_cpu_ns`
(the CPU time of that code).
The digest and the writing of the file happen after the step's clock stopped, once.

Only the Python standard library, torch and DeepSpeed are used.
"""

import atexit
import enum
import hashlib
import json
import os
import platform
import struct
import sys
import time
import zlib

SCHEMA_VERSION = 1
KIND = "ratiolab-probe"

# The audit file (docs/audit-format.md).
AUDIT_MAGIC = b"RLAUDIT\0"
AUDIT_MAX_NUMEL = 1 << 22           # default bound on a rank's fp32 elements (112 MiB of audit)
AUDIT_VERSION = 1
AUDIT_HEADER = "<8sIIIIQ"          # magic, version, header bytes, records, crc32, body bytes
AUDIT_RECORD = "<IIIIIIiIqQddddddddddII"  # see audit_record
AUDIT_OPTIMIZERS = {"ds_cpu_adam": 1, "torch_adamw": 2, "torch_adamw_foreach": 3}
AUDIT_ARRAYS = ("param_before", "grad", "exp_avg_before", "exp_avg_sq_before",
                "param_after", "exp_avg_after", "exp_avg_sq_after")


def _proc_status():
    """VmRSS, VmHWM, VmLck and VmPin of this process in bytes (Linux; {} elsewhere)."""
    out = {}
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                k, _, v = line.partition(b":")
                if k in (b"VmRSS", b"VmHWM", b"VmLck", b"VmPin"):
                    out[k.decode()] = int(v.split()[0]) * 1024
    except OSError:
        pass
    return out


def _reset_peak_rss():
    """Resets VmHWM to the current RSS (Linux >= 4.0: clear_refs 5); False when not allowed."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _version(mod):
    return getattr(mod, "__version__", None)


def _jsonable(x):
    """The config as plain JSON types; anything else becomes its str()."""
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, enum.Enum):
        return _jsonable(x.value)
    if isinstance(x, bool) or x is None or isinstance(x, (int, str)):
        return x
    if isinstance(x, float):
        return x if x == x and x not in (float("inf"), float("-inf")) else str(x)
    if hasattr(x, "model_dump"):
        return _jsonable(x.model_dump())
    if hasattr(x, "dict"):
        try:
            return _jsonable(x.dict())
        except Exception:  # noqa: BLE001 -- a pydantic-like object that is not
            pass
    return str(x)


def _tensor_bytes(t):
    return int(t.numel()) * int(t.element_size())


class Probe:
    """One rank's observations; `attach` makes it, `write` (also at exit) saves it."""

    def __init__(self, engine, out, digest_step, steps_kept, audit_step=None, audit_out=None,
                 audit_max_numel=AUDIT_MAX_NUMEL):
        import torch
        self._torch = torch
        self.engine = engine
        self.out = out
        self.digest_step = digest_step
        self.steps_kept = steps_kept
        self.rank = int(torch.distributed.get_rank()) if torch.distributed.is_initialized() else 0
        self.world = int(torch.distributed.get_world_size()) if torch.distributed.is_initialized() else 1
        self.cuda = bool(torch.cuda.is_available() and torch.cuda.is_initialized())
        self.steps = []
        self.overhead_ns = 0
        self.overhead_cpu_ns = 0
        self.digest = None
        self.placement = None
        self._t_start = None
        self._written = False
        self._timer_seen = {}
        self._timer_logged = {}
        self._timer_pending = []
        self.audit_step = audit_step
        self.audit_out = audit_out
        self.audit = None
        self._audit_records = []
        self._steps_done = 0           # optimizer steps (gradient-accumulation boundaries)
        self._micro_steps = 0          # engine.step() calls, one per micro-batch
        self._window_micro_steps = 0   # those since the last optimizer step
        self.after_init = self._memory()
        self.host_after_init = _proc_status()
        self.static = self._static()
        self.static.update(self._static_accumulation())
        self.param_groups = self._param_groups()
        self._wrap()
        if audit_step is not None:
            self._wrap_audit(audit_max_numel)
        self.hparams = None
        self._wrap_hparams()
        atexit.register(self.write)

    # ---- what does not change ------------------------------------------------------------------
    def _static(self):
        import torch
        import deepspeed
        from deepspeed.accelerator import get_accelerator
        eng = self.engine
        acc = get_accelerator()
        cfg = getattr(eng, "_config", None)
        zc = getattr(cfg, "zero_config", None)
        zero = _jsonable(zc) if zc is not None else None
        dtype = None
        for name, attr in (("bf16", "bfloat16_enabled"), ("fp16", "fp16_enabled")):
            f = getattr(eng, attr, None)
            if callable(f) and f():
                dtype = name
        return {
            "deepspeed_version": _version(deepspeed),
            "torch_version": _version(torch),
            "python_version": platform.python_version(),
            "accelerator": {
                "name": getattr(acc, "_name", None),
                "device_name": acc.device_name(),
                "communication_backend": acc.communication_backend_name(),
            },
            "zero": zero,
            "dtype": dtype or "fp32",
            "wall_clock_breakdown": bool(getattr(cfg, "wall_clock_breakdown", False)),
        }

    def _static_accumulation(self):
        """The run's gradient accumulation and micro-batch: a step in the file is an optimizer
        step, made of gradient_accumulation_steps micro-steps (engine.step() calls)."""
        eng = self.engine
        out = {}
        for key, attr in (("gradient_accumulation_steps", "gradient_accumulation_steps"),
                          ("micro_batch_size", "train_micro_batch_size_per_gpu")):
            f = getattr(eng, attr, None)
            try:
                out[key] = int(f()) if callable(f) else None
            except Exception:  # noqa: BLE001 -- an engine without the accessor: unknown
                out[key] = None
        return out

    def _accumulation_boundary(self):
        """Whether the engine.step() about to run is an optimizer step: the engine's own test
        (micro_steps + 1 a multiple of gradient_accumulation_steps, before step() counts it);
        True for an engine without it."""
        f = getattr(self.engine, "is_gradient_accumulation_boundary", None)
        return bool(f()) if callable(f) else True

    def _param_groups(self):
        """Each param group of the ZeRO-3 optimizer in order: its parameters' names (the model's
        named_parameters names, in the order DeepSpeed packs them into sub-groups), their
        elements, and the group's lr and weight decay at attach. None when the optimizer has no
        ZeRO-3 sub-groups."""
        zo = self.engine.optimizer
        subs = getattr(zo, "fp16_groups", None)
        to_group = getattr(zo, "sub_group_to_group_id", None)
        if subs is None or to_group is None:
            return None
        module = getattr(self.engine, "module", None)
        names = {id(p): n for n, p in module.named_parameters()} if module is not None else {}
        inner = getattr(zo, "optimizer", None)
        hp = getattr(inner, "param_groups", None) or []
        groups = {}
        for i, sub in enumerate(subs):
            g = groups.setdefault(int(to_group.get(i, -1) if isinstance(to_group, dict) else to_group[i]),
                                  {"parameters": [], "numel": 0})
            for p in sub:
                g["parameters"].append(names.get(id(p), "?"))
                g["numel"] += int(getattr(p, "ds_numel", p.numel()))
        out = []
        for k in sorted(groups):
            g = {"index": k}
            g.update(groups[k])
            if 0 <= k < len(hp):
                g["lr"] = _jsonable(hp[k].get("lr"))
                g["weight_decay"] = _jsonable(hp[k].get("weight_decay"))
            out.append(g)
        return out

    # ---- memory --------------------------------------------------------------------------------
    def _memory(self):
        """Device memory now: torch.cuda's allocator on a GPU, else the process RSS."""
        if self.cuda:
            t = self._torch.cuda
            return {"source": "torch.cuda.memory_allocated", "bytes": int(t.memory_allocated())}
        return {"source": "process_rss", "bytes": _proc_status().get("VmRSS")}

    def _step_peak(self):
        if self.cuda:
            return int(self._torch.cuda.max_memory_allocated())
        return _proc_status().get("VmHWM")

    def _reset_peak(self):
        if self.cuda:
            self._torch.cuda.reset_peak_memory_stats()
        else:
            _reset_peak_rss()

    # ---- hooks ---------------------------------------------------------------------------------
    def _wrap(self):
        eng = self.engine
        fwd, step = eng.forward, eng.step
        probe = self

        def forward(*a, **k):
            if probe._t_start is None:
                c0 = time.thread_time_ns()
                t0 = time.perf_counter_ns()
                probe._reset_peak()
                probe._t_start = time.perf_counter_ns()
                probe.overhead_ns += probe._t_start - t0
                probe.overhead_cpu_ns += time.thread_time_ns() - c0
            return fwd(*a, **k)

        def step_(*a, **k):
            c0 = time.thread_time_ns()
            t0 = time.perf_counter_ns()
            boundary = probe._accumulation_boundary()
            probe.overhead_ns += time.perf_counter_ns() - t0
            probe.overhead_cpu_ns += time.thread_time_ns() - c0
            r = step(*a, **k)
            probe._micro_steps += 1
            probe._window_micro_steps += 1
            if not boundary:   # a micro-step inside gradient accumulation: no optimizer step
                return r
            probe._steps_done += 1
            probe._after_step()
            if probe.audit_step is not None and probe._steps_done == probe.audit_step:
                probe._audit_finish()
            return r

        eng.forward = forward
        eng.step = step_
        if self.static["wall_clock_breakdown"]:
            self._wrap_timers_log()

    # ---- the audit (docs/audit-format.md) ------------------------------------------------------
    def _wrap_audit(self, max_numel):
        """Wraps the ZeRO-3 optimizer's per-sub-group step: around optimizer step audit_step, each
        sub-group's state is copied before and after (copies only: the run's tensors are read,
        never written). Refuses a model whose fp32 partitions exceed max_numel elements."""
        zo = self.engine.optimizer
        if not hasattr(zo, "_optimizer_step") or not hasattr(zo, "fp32_partitioned_groups_flat"):
            raise TypeError("ratiolab_probe: audit_step needs a ZeRO-3 optimizer (%s has no "
                            "_optimizer_step)" % type(zo).__name__)
        if not (isinstance(self.audit_step, int) and self.audit_step >= 1):
            raise ValueError("ratiolab_probe: audit_step %r is not allowed (an int >= 1)" % (self.audit_step,))
        total = sum(int(t.numel()) for t in zo.fp32_partitioned_groups_flat if t is not None)
        if total > max_numel:
            raise ValueError("ratiolab_probe: audit_step: this rank's fp32 partitions hold %d elements, "
                             "more than audit_max_numel %d (28 bytes each in the audit file)" % (total, max_numel))
        self._ds_build = None
        orig = zo._optimizer_step
        probe = self

        def optimizer_step(sub_group_id):
            if probe._steps_done + 1 != probe.audit_step:
                return orig(sub_group_id)
            c0 = time.thread_time_ns()
            t0 = time.perf_counter_ns()
            rec = probe._audit_before(zo, sub_group_id)
            t1 = time.perf_counter_ns()
            r = orig(sub_group_id)
            t2 = time.perf_counter_ns()
            probe._audit_after(zo, sub_group_id, rec)
            probe._audit_ns += (t1 - t0) + (time.perf_counter_ns() - t2)
            probe._audit_cpu_ns += time.thread_time_ns() - c0
            return r

        self._audit_ns = 0
        self._audit_cpu_ns = 0
        zo._optimizer_step = optimizer_step

    def _audit_stepping(self, zo, sg):
        """(optimizer object, its index: 0 own, 1 backup) that DeepSpeed's _optimizer_step
        (0.14.1 and 0.19.8) uses for sub-group sg."""
        if getattr(zo, "offload_optimizer", False) and getattr(zo, "subgroup_to_device", None):
            if zo.subgroup_to_device[sg] != "cpu" and getattr(zo, "backup_optimizer", None) is not None:
                return zo.backup_optimizer, 1
        return zo.optimizer, 0

    def _audit_before(self, zo, sg):
        torch = self._torch
        pgid = zo.sub_group_to_group_id[sg]
        fp32 = zo.fp32_partitioned_groups_flat[sg]
        opt, which = self._audit_stepping(zo, sg)
        grp = opt.param_groups[pgid]
        eng = zo.optimizer.param_groups[pgid]
        st = opt.state.get(fp32, {})
        n = int(fp32.numel())

        def cp(t):
            return t.detach().reshape(-1).to("cpu", torch.float32, copy=True)

        zeros = torch.zeros(n, dtype=torch.float32)
        name, simd, fma = self._audit_kind(opt, fp32)
        return {
            "optimizer": name, "rank": self.rank, "sub_group": int(sg), "param_group": int(pgid),
            "optimizer_object": which, "simd_width": simd, "tail_fma": fma, "numel": n,
            "lr": grp["lr"], "beta1": grp["betas"][0], "beta2": grp["betas"][1], "eps": grp["eps"],
            "weight_decay": grp["weight_decay"],
            "group": {"lr": eng["lr"], "beta1": eng["betas"][0], "beta2": eng["betas"][1],
                      "eps": eng["eps"], "weight_decay": eng["weight_decay"]},
            "adamw_mode": bool(getattr(opt, "adam_w_mode", True)),
            "bias_correction": bool(grp.get("bias_correction", True)),
            "param_before": cp(fp32), "grad": cp(fp32.grad) if fp32.grad is not None else zeros,
            "exp_avg_before": cp(st["exp_avg"]) if "exp_avg" in st else zeros,
            "exp_avg_sq_before": cp(st["exp_avg_sq"]) if "exp_avg_sq" in st else zeros,
            "_opt": opt, "_fp32": fp32,
        }

    def _audit_kind(self, opt, fp32):
        """The optimizer's name in the audit file, and for DeepSpeedCPUAdam its build's SIMD
        width and FMA use (audit_ds_build); torch AdamW's foreach choice as torch makes it."""
        kind = type(opt).__name__
        if kind == "DeepSpeedCPUAdam":
            if self._ds_build is None:
                self._ds_build = audit_ds_build()
            return "ds_cpu_adam", self._ds_build[0], self._ds_build[1]
        if kind == "AdamW":
            foreach = opt.defaults.get("foreach")
            if foreach is None:
                from torch.optim.optimizer import _default_to_fused_or_foreach
                foreach = _default_to_fused_or_foreach([fp32], False, use_fused=False)[1]
            return ("torch_adamw_foreach" if foreach else "torch_adamw"), 0, False
        raise TypeError("ratiolab_probe: audit: no replay for optimizer %s" % kind)

    def _audit_after(self, zo, sg, rec):
        opt, fp32 = rec.pop("_opt"), rec.pop("_fp32")
        st = opt.state[fp32]
        step = st["step"]
        rec["step"] = int(step.item()) if self._torch.is_tensor(step) else int(step)
        for k, name in (("param_after", None), ("exp_avg_after", "exp_avg"), ("exp_avg_sq_after", "exp_avg_sq")):
            t = fp32 if name is None else st[name]
            rec[k] = t.detach().reshape(-1).to("cpu", self._torch.float32, copy=True)
        self._audit_records.append(rec)

    def _audit_finish(self):
        """Writes this rank's audit file once step audit_step is over (outside the step's clock)."""
        path = _rank_path(self.audit_out or os.path.splitext(self.out)[0] + ".audit.rla", self.rank)
        t0 = time.perf_counter_ns()
        recs = sorted(self._audit_records, key=lambda r: r["sub_group"])
        audit_write(path, recs)
        self.audit = {"step": self.audit_step, "file": os.path.basename(path), "records": len(recs),
                      "bytes": os.path.getsize(path), "capture_ns": self._audit_ns,
                      "capture_cpu_ns": self._audit_cpu_ns, "write_ns": time.perf_counter_ns() - t0,
                      "ds_build": None if self._ds_build is None else
                      {"simd_width": self._ds_build[0], "tail_fma": self._ds_build[1],
                       "cxx_args": self._ds_build[2]}}
        self._audit_records = []

    # ---- the hyperparameters of every update (docs/json-probe.md "hparams") ---------------------
    def _wrap_hparams(self):
        """Records, at every optimizer step, the engine's param groups' hyperparameters as the
        scheduler left them (read before the step's first sub-group: `engine`), and for every
        sub-group's update the optimizer object that stepped it and the hyperparameters of the
        param group it held then (read inside that optimizer's step: `updates`), with the
        parameter's step count after it. Reads dicts and ints only; nothing synchronises."""
        zo = self.engine.optimizer
        if not hasattr(zo, "_optimizer_step") or getattr(zo, "optimizer", None) is None:
            return
        probe = self
        hp = {"engine": [], "updates": [], "dropped": 0}
        self.hparams = hp
        cur = {"sub_group": None, "round": 0, "engine_step": None}
        orig_sg = zo._optimizer_step

        def optimizer_step(sub_group_id):
            c0 = time.thread_time_ns()
            t0 = time.perf_counter_ns()
            if cur["engine_step"] != probe._steps_done:   # the first sub-group of an optimizer step
                cur["engine_step"] = probe._steps_done
                cur["round"] += 1
                if cur["round"] <= probe.steps_kept:
                    hp["engine"].append([_hparams_of(g) for g in zo.optimizer.param_groups])
            cur["sub_group"] = int(sub_group_id)
            probe.overhead_ns += time.perf_counter_ns() - t0
            probe.overhead_cpu_ns += time.thread_time_ns() - c0
            try:
                return orig_sg(sub_group_id)
            finally:
                cur["sub_group"] = None

        zo._optimizer_step = optimizer_step
        for label in ("optimizer", "backup_optimizer"):
            opt = getattr(zo, label, None)
            if opt is not None and callable(getattr(opt, "step", None)):
                self._wrap_hparams_step(opt, label, hp, cur)

    def _wrap_hparams_step(self, opt, label, hp, cur):
        """One optimizer's step, wrapped for _wrap_hparams: DeepSpeed gives the param group of the
        sub-group it steps that one flat tensor and empties it afterwards (_optimizer_step)."""
        orig = opt.step
        probe = self
        torch = self._torch

        def step(*a, **k):
            c0 = time.thread_time_ns()
            t0 = time.perf_counter_ns()
            live = [(i, g) for i, g in enumerate(opt.param_groups) if g.get("params")]
            rec = {"step": cur["round"], "sub_group": cur["sub_group"], "optimizer": label,
                   "optimizer_class": type(opt).__name__}
            param = None
            if len(live) == 1:
                rec["param_group"] = live[0][0]
                rec.update(_hparams_of(live[0][1]))
                param = live[0][1]["params"][0]
            probe.overhead_ns += time.perf_counter_ns() - t0
            probe.overhead_cpu_ns += time.thread_time_ns() - c0
            r = orig(*a, **k)
            c0 = time.thread_time_ns()
            t0 = time.perf_counter_ns()
            st = opt.state.get(param, {}).get("step") if param is not None else None
            rec["opt_step"] = None if st is None else int(st.item()) if torch.is_tensor(st) else int(st)
            if cur["round"] <= probe.steps_kept:
                hp["updates"].append(rec)
            else:
                hp["dropped"] += 1
            probe.overhead_ns += time.perf_counter_ns() - t0
            probe.overhead_cpu_ns += time.thread_time_ns() - c0
            return r

        opt.step = step

    def _wrap_timers_log(self):
        """DeepSpeed's engine.step() logs its micro timers at the end of every step when the
        wall-clock breakdown is on (timers.log(..., reset=True) clears their records) and the
        global ones every steps_per_print steps: their records are taken, unread, just before the
        log clears them, so the step's own snapshot still has them."""
        timers = getattr(self.engine, "timers", None)
        table = getattr(timers, "timers", None)
        orig = getattr(timers, "log", None)
        if not isinstance(table, dict) or not callable(orig):
            return
        probe = self

        def log(names, *a, **k):
            c0 = time.thread_time_ns()
            t0 = time.perf_counter_ns()
            reset = k.get("reset", a[1] if len(a) > 1 else True)
            for name in names or ():
                recs = getattr(table.get(name), "event_timers", None)
                if not isinstance(recs, list):
                    continue
                seen = probe._timer_seen.get(name, 0)
                if len(recs) < seen:
                    seen = 0
                if len(recs) > seen:
                    probe._timer_logged.setdefault(name, []).extend(recs[seen:])
                probe._timer_seen[name] = 0 if reset else len(recs)
            probe.overhead_ns += time.perf_counter_ns() - t0
            probe.overhead_cpu_ns += time.thread_time_ns() - c0
            return orig(names, *a, **k)

        timers.log = log

    def _timers_snapshot(self):
        """The DeepSpeed timers' records added since the last step, kept unread (reading a CUDA
        event timer would synchronise): resolved when the file is written."""
        timers = getattr(self.engine, "timers", None)
        table = getattr(timers, "timers", None)
        if not isinstance(table, dict):
            return {}
        new = self._timer_logged   # what timers.log took during the step, then what is still there
        self._timer_logged = {}
        for name, t in table.items():
            recs = getattr(t, "event_timers", None)
            if not isinstance(recs, list):
                continue
            seen = self._timer_seen.get(name, 0)
            if len(recs) < seen:  # DeepSpeed logged and cleared them
                seen = 0
            if len(recs) > seen:
                new.setdefault(name, []).extend(recs[seen:])
            self._timer_seen[name] = len(recs)
        return new

    def _after_step(self):
        t_end = time.perf_counter_ns()
        c0 = time.thread_time_ns()
        start = self._t_start if self._t_start is not None else t_end
        peak = self._step_peak()
        k = len(self.steps) + 1
        rec = {"step": k, "micro_steps": self._window_micro_steps, "wall_ns": t_end - start,
               "device_peak_bytes": peak}
        self._window_micro_steps = 0
        if self.static["wall_clock_breakdown"]:
            self._timer_pending.append((rec, self._timers_snapshot()))
        if k <= self.steps_kept:
            self.steps.append(rec)
        else:
            self.steps_dropped = getattr(self, "steps_dropped", 0) + 1
        self._t_start = None
        self.overhead_ns += time.perf_counter_ns() - t_end
        self.overhead_cpu_ns += time.thread_time_ns() - c0
        if k == 1 or k == self.digest_step:
            self.placement = self._placement()   # after a step: Adam state exists
        if k == self.digest_step:
            self.digest = self._digest(k)
            self.write()

    # ---- the optimizer ------------------------------------------------------------------------
    def _placement(self):
        opt = self.engine.optimizer
        fp32 = getattr(opt, "fp32_partitioned_groups_flat", None)
        if fp32 is None:
            return {"error": "the engine's optimizer %s has no ZeRO-3 sub-groups" % type(opt).__name__}
        numel = getattr(opt, "fp16_partitioned_groups_flat_numel", None) or [int(t.numel()) for t in fp32]
        fp16 = getattr(opt, "fp16_partitioned_groups_flat", None) or []
        to_group = getattr(opt, "sub_group_to_group_id", {}) or {}
        to_dev = getattr(opt, "subgroup_to_device", None)
        inner = getattr(opt, "optimizer", None)
        backup = getattr(opt, "backup_optimizer", None)
        subs = []
        for i, t in enumerate(fp32):
            holder, state = None, None
            for label, o in (("optimizer", inner), ("backup_optimizer", backup)):
                st = getattr(o, "state", None) if o is not None else None
                if st is not None and t in st and st[t]:
                    holder, state = (label, type(o).__name__), st[t]
                    break
            state_bytes, state_dev = 0, None
            if state:
                for v in state.values():
                    if hasattr(v, "numel") and v.dim() > 0:
                        state_bytes += _tensor_bytes(v)
                        state_dev = str(v.device)
            g = t.grad
            f16 = fp16[i] if i < len(fp16) else None
            subs.append({
                "index": i,
                "param_group": int(to_group.get(i, -1)),
                "numel": int(numel[i]),
                "assigned_device": to_dev.get(i) if isinstance(to_dev, dict) else None,
                "fp32_device": str(t.device),
                "fp32_bytes": _tensor_bytes(t),
                "grad_device": str(g.device) if g is not None else None,
                "grad_bytes": _tensor_bytes(g) if g is not None else 0,
                "model_partition_bytes": _tensor_bytes(f16) if f16 is not None and f16.numel() else None,
                "optimizer": holder[0] if holder else None,
                "optimizer_class": holder[1] if holder else None,
                "state_device": state_dev,
                "state_bytes": state_bytes,
            })
        return {
            "optimizer_class": type(inner).__name__ if inner is not None else None,
            "backup_optimizer_class": type(backup).__name__ if backup is not None else None,
            "partial_offload": getattr(opt, "partial_offload", None),
            "subgroups": subs,
        }

    def _digest(self, step):
        """SHA-256 of this rank's fp32 master partitions, sub-group by sub-group in order (raw
        little-endian float32 bytes), and one per sub-group. Copies to the host, reads only."""
        fp32 = getattr(self.engine.optimizer, "fp32_partitioned_groups_flat", None)
        if fp32 is None:
            return None
        t0 = time.perf_counter_ns()
        whole = hashlib.sha256()
        per = []
        for t in fp32:
            b = t.detach().float().cpu().contiguous().numpy().tobytes()
            whole.update(b)
            per.append(hashlib.sha256(b).hexdigest()[:16])
        return {"step": step, "algorithm": "sha256-fp32-master-partitions", "sha256": whole.hexdigest(),
                "subgroups": per, "took_ns": time.perf_counter_ns() - t0}

    # ---- output --------------------------------------------------------------------------------
    def document(self):
        for rec, snap in self._timer_pending:
            ms = {}
            for name, recs in snap.items():
                total = 0.0
                for r in recs:
                    total += r * 1000.0 if isinstance(r, float) else float(r.get_elapsed_msec())
                ms[name] = round(total, 6)
            rec["timers_ms"] = ms
        self._timer_pending = []
        wall = [s["wall_ns"] for s in self.steps]
        host = _proc_status()
        d = {
            "schema_version": SCHEMA_VERSION,
            "kind": KIND,
            "rank": self.rank,
            "world_size": self.world,
            "dp_world_size": int(getattr(self.engine, "dp_world_size", self.world)),
        }
        d.update(self.static)
        d["memory"] = {
            "device_source": self.after_init["source"],
            "device_after_init_bytes": self.after_init["bytes"],
            "device_peak_per_step_bytes": [s["device_peak_bytes"] for s in self.steps],
            "host_rss_after_init_bytes": self.host_after_init.get("VmRSS"),
            "host_rss_bytes": host.get("VmRSS"),
            "host_peak_rss_bytes": host.get("VmHWM"),
            "host_locked_bytes": host.get("VmLck"),
            "host_pinned_bytes": host.get("VmPin"),
        }
        d["param_groups"] = self.param_groups
        d["micro_steps"] = self._micro_steps
        d["optimizer_steps"] = self._steps_done
        d["steps"] = self.steps
        d["steps_dropped"] = getattr(self, "steps_dropped", 0)
        d["probe_overhead_ns"] = self.overhead_ns
        d["probe_overhead_cpu_ns"] = self.overhead_cpu_ns
        d["step_wall_ns_total"] = sum(wall)
        d["placement"] = self.placement
        d["digest"] = self.digest
        if self.audit is not None:
            d["audit"] = self.audit
        if self.hparams is not None:
            d["hparams"] = self.hparams
        return d

    def write(self):
        """Writes the document (atomically: a temporary file renamed); also called at exit."""
        if self.out is None:
            return None
        path = _rank_path(self.out, self.rank)
        tmp = "%s.tmp.%d" % (path, os.getpid())
        with open(tmp, "w") as f:
            json.dump(self.document(), f, indent=1, sort_keys=False)
            f.write("\n")
        os.replace(tmp, path)
        self._written = True
        return path


# ---- the audit file (docs/audit-format.md) --------------------------------------------------


def audit_ds_build():
    """How this process's DeepSpeedCPUAdam op was compiled, from its op builder's own compiler
    arguments (the ones torch's JIT hashed into the build it loaded): (simd_width, tail_fma,
    args). simd_width is 16 / 8 with -D__AVX512__ / -D__AVX256__ (the vector body of Step_AVX),
    else 0; tail_fma is whether the scalar loop has fused multiply-adds (-march= on a CPU with
    FMA: g++'s default -ffp-contract=fast fuses them; DeepSpeed 0.14.1's CPU builder passes no
    -march, 0.19.8's passes -march=native)."""
    from deepspeed.ops.op_builder import CPUAdamBuilder
    b = CPUAdamBuilder()
    args = [a for a in b.strip_empty_entries(b.cxx_args())]
    simd = 16 if "-D__AVX512__" in args else 8 if "-D__AVX256__" in args else 0
    fma_cpu = False
    try:
        with open("/proc/cpuinfo") as f:
            fma_cpu = any(line.startswith("flags") and " fma" in line for line in f)
    except OSError:
        pass
    tail_fma = fma_cpu and any(a.startswith("-march=") for a in args)
    return simd, tail_fma, args


def audit_ds_tail_fma():
    return audit_ds_build()[1]


def audit_record(r):
    """One sub-group's record as bytes: the fixed 136-byte head, then the seven float32 arrays of
    AUDIT_ARRAYS (each r[name] a flat CPU float32 tensor of r["numel"] elements). r["group"]
    holds the param group's own lr, beta1, beta2, eps and weight_decay (the engine's, which the
    scheduler sets); r["lr"] ... are what the stepping optimizer held."""
    import torch
    n = int(r["numel"])
    flags = (1 if r["adamw_mode"] else 0) | (2 if r["bias_correction"] else 0) | (4 if r.get("tail_fma") else 0)
    head = struct.pack(AUDIT_RECORD, struct.calcsize(AUDIT_RECORD) + 28 * n,
                       AUDIT_OPTIMIZERS[r["optimizer"]], r["rank"], r["sub_group"],
                       r["param_group"], r["optimizer_object"], r["simd_width"], flags,
                       int(r["step"]), n, float(r["lr"]), float(r["beta1"]), float(r["beta2"]),
                       float(r["eps"]), float(r["weight_decay"]),
                       *[float(r["group"][k]) for k in ("lr", "beta1", "beta2", "eps", "weight_decay")],
                       int(r.get("first_element", 0)), int(r.get("subgroup_numel", n)))
    parts = [head]
    for name in AUDIT_ARRAYS:
        t = r[name].detach().reshape(-1).to(torch.float32).contiguous()
        if t.numel() != n:
            raise ValueError("audit: %s has %d elements, numel is %d" % (name, t.numel(), n))
        parts.append(t.numpy().astype("<f4", copy=False).tobytes())
    return b"".join(parts)


def audit_write(path, records):
    """Writes records (dicts for audit_record) to path: header, records, zlib crc32 of the body."""
    body = b"".join(audit_record(r) for r in records)
    head = struct.pack(AUDIT_HEADER, AUDIT_MAGIC, AUDIT_VERSION, struct.calcsize(AUDIT_HEADER),
                       len(records), zlib.crc32(body) & 0xffffffff, len(body))
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(head)
        f.write(body)
    os.replace(tmp, path)


def _hparams_of(group):
    """A param group's Adam hyperparameters as plain numbers (an lr may be a tensor)."""
    def num(x):
        return float(x.item()) if hasattr(x, "item") else float(x)
    b = group.get("betas", (None, None))
    return {"lr": num(group["lr"]), "beta1": num(b[0]), "beta2": num(b[1]), "eps": num(group.get("eps", 0.0)),
            "weight_decay": num(group.get("weight_decay", 0.0))}


def _rank_path(out, rank):
    if "{rank}" in out:
        return out.replace("{rank}", str(rank))
    if rank == 0:
        return out
    stem, ext = os.path.splitext(out)
    return "%s.rank%d%s" % (stem, rank, ext or ".json")


def attach(engine, out="probe.json", digest_step=None, steps_kept=1000, audit_step=None, audit_out=None,
           audit_max_numel=AUDIT_MAX_NUMEL):
    """Attaches a probe to a DeepSpeed engine (after deepspeed.initialize, before the first
    step). A step is an optimizer step: with gradient accumulation, gradient_accumulation_steps
    engine.step() calls (micro-steps), the last at the engine's accumulation boundary; the file
    counts both. digest_step: the optimizer step after which the fp32 master weights are digested
    and the file written (None: no digest); steps_kept: per-step records kept (later steps are
    counted only).
    audit_step: the optimizer step (1-based) around which every sub-group's optimizer update is
    recorded into an audit file (docs/audit-format.md; audit_out, default <out stem>.audit.rla
    with the rank rule of `out`), refused when the rank's fp32 partitions exceed audit_max_numel.
    Returns the Probe; the file is (re)written at exit and by probe.write()."""
    if not hasattr(engine, "step") or not hasattr(engine, "optimizer"):
        raise TypeError("ratiolab_probe.attach: %r is not a DeepSpeed engine" % type(engine).__name__)
    return Probe(engine, out, digest_step, steps_kept, audit_step, audit_out, audit_max_numel)


def _engine_of(model):
    """The DeepSpeed engine that wraps `model` (engine.module is model), found through the
    objects that refer to the model (the engine's module table); None when there is none."""
    import gc
    from deepspeed.runtime.engine import DeepSpeedEngine
    if isinstance(model, DeepSpeedEngine):
        return model
    for r in gc.get_referrers(model):
        if isinstance(r, DeepSpeedEngine) and getattr(r, "module", None) is model:
            return r
        if isinstance(r, dict):
            for r2 in gc.get_referrers(r):
                if isinstance(r2, DeepSpeedEngine) and getattr(r2, "module", None) is model:
                    return r2
    return None


class TrainerCallback:
    """The probe for a `transformers.Trainer` run with a DeepSpeed config, in one line:

        trainer = Trainer(..., callbacks=[ratiolab_probe.TrainerCallback(out="probe.json", digest_step=3)])

    At on_train_begin (the Trainer has built the DeepSpeed engine by then) it attaches a probe to
    the engine that wraps the Trainer's model, with attach()'s arguments; at on_train_end it writes
    the file. Every other Trainer event does nothing. `probe` is the attached Probe (None before
    training starts). Duck-typed: the Trainer calls each event by name, so transformers is not
    imported here."""

    def __init__(self, out="probe.json", digest_step=None, steps_kept=1000, audit_step=None, audit_out=None,
                 audit_max_numel=AUDIT_MAX_NUMEL):
        self.kw = {"out": out, "digest_step": digest_step, "steps_kept": steps_kept, "audit_step": audit_step,
                   "audit_out": audit_out, "audit_max_numel": audit_max_numel}
        self.probe = None

    def __getattr__(self, name):
        if name.startswith("on_"):
            return lambda *a, **k: None
        raise AttributeError(name)

    def on_train_begin(self, args, state, control, model=None, **kw):
        if self.probe is not None:
            return None
        engine = _engine_of(model) if model is not None else None
        if engine is None:
            raise TypeError("ratiolab_probe.TrainerCallback: the Trainer's model is not wrapped by a DeepSpeed "
                            "engine (TrainingArguments(deepspeed=...) is needed)")
        self.probe = attach(engine, **self.kw)
        return None

    def on_train_end(self, args, state, control, **kw):
        if self.probe is not None:
            self.probe.write()
        return None


if __name__ == "__main__":
    sys.stderr.write(__doc__)
