"""Health guard: a separate process that samples the machine and asks training to stop before hardware or the run
gets hurt.

It is a process (not a thread) so that a training step that holds the GIL or hangs in a kernel cannot stop the
sampling. Readings come from a ``ReadingSource``; the default reads NVML (when a GPU exists) and psutil, and tests
swap in ``ScriptedReadings`` to fire each stop rule on purpose while the trainer stays real.
"""

from __future__ import annotations

import multiprocessing as mp
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import orjson
import psutil
from pydantic import BaseModel

from harnessfit.train.guard_rules import GuardRules

__all__ = [
    "Reading",
    "ReadingSource",
    "SystemReadings",
    "ScriptedReadings",
    "StopDecision",
    "evaluate_rules",
    "HealthGuard",
    "envelope",
]

GIB = 1024**3


class Reading(BaseModel):
    """One sample. GPU fields are None where no GPU (or no NVML) exists."""

    t: float = 0.0  # seconds since the guard started (relative: no wall clock inside records)
    gpu_temp_c: float | None = None
    gpu_power_w: float | None = None
    gpu_mem_used_gib: float | None = None
    gpu_mem_total_gib: float | None = None
    host_mem_avail_gib: float
    swap_used_gib: float
    disk_free_gib: float


class ReadingSource(Protocol):
    def read(self) -> Reading: ...


@dataclass
class SystemReadings:
    """Real readings: NVML for GPU 0 (if any), psutil for memory and swap, ``shutil.disk_usage`` for the output disk."""

    disk_path: str
    _nvml: object | None = field(default=None, init=False, repr=False)

    def _gpu(self) -> dict:
        if self._nvml is False:
            return {}
        try:
            import pynvml

            if self._nvml is None:
                pynvml.nvmlInit()
                self._nvml = pynvml.nvmlDeviceGetHandleByIndex(0)
            h = self._nvml
            mem = pynvml.nvmlDeviceGetMemoryInfo(h)
            return {
                "gpu_temp_c": float(pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU)),
                "gpu_power_w": pynvml.nvmlDeviceGetPowerUsage(h) / 1000.0,
                "gpu_mem_used_gib": mem.used / GIB,
                "gpu_mem_total_gib": mem.total / GIB,
            }
        except Exception:  # noqa: BLE001 - no driver / no GPU: GPU fields stay empty from now on
            self._nvml = False
            return {}

    def read(self) -> Reading:
        vm = psutil.virtual_memory()
        sw = psutil.swap_memory()
        return Reading(
            host_mem_avail_gib=vm.available / GIB,
            swap_used_gib=sw.used / GIB,
            disk_free_gib=shutil.disk_usage(self.disk_path).free / GIB,
            **self._gpu(),
        )


@dataclass
class ScriptedReadings:
    """Readings from a list (the last one repeats): to fire stop rules on purpose in tests and drills."""

    readings: list[dict]
    _i: int = field(default=0, init=False)

    def read(self) -> Reading:
        r = self.readings[min(self._i, len(self.readings) - 1)]
        self._i += 1
        return Reading(**r)


class StopDecision(BaseModel):
    """Whether to stop, why, and how close each rule is (0 = far, 1 = at the threshold)."""

    stop: bool
    rule: str | None = None
    reason: str | None = None


def evaluate_rules(rules: GuardRules, history: list[Reading]) -> StopDecision:
    """Apply the stop rules to the readings so far (the newest last)."""
    r = history[-1]
    n = rules.gpu_temp_readings
    hot = [x.gpu_temp_c for x in history[-n:] if x.gpu_temp_c is not None]
    if len(hot) == n and all(t >= rules.gpu_temp_c for t in hot):
        return StopDecision(
            stop=True,
            rule="gpu_temp",
            reason=f"GPU at {hot[-1]:.0f} C for {n} readings (limit {rules.gpu_temp_c:.0f} C)",
        )
    if r.host_mem_avail_gib < rules.min_host_mem_gib:
        return StopDecision(
            stop=True,
            rule="host_mem",
            reason=f"host memory available {r.host_mem_avail_gib:.2f} GiB < {rules.min_host_mem_gib} GiB",
        )
    if r.disk_free_gib < rules.min_free_disk_gib:
        return StopDecision(
            stop=True, rule="disk", reason=f"free disk {r.disk_free_gib:.2f} GiB < {rules.min_free_disk_gib} GiB"
        )
    return StopDecision(stop=False)


def _guard_main(
    source: ReadingSource, rules: GuardRules, samples_path: str, stop_path: str, stop_event, quit_event
) -> None:
    """The guard process body: sample, append JSONL, on a firing rule write the reason and set ``stop_event``."""
    import time

    start = time.monotonic()
    parent = mp.parent_process()
    history: list[Reading] = []
    with open(samples_path, "ab") as fh:
        while not quit_event.is_set():
            if parent is not None and not parent.is_alive():
                return  # the trainer was killed (e.g. kill -9): the guard goes with it
            try:
                reading = source.read()
            except Exception as exc:  # noqa: BLE001 - a broken sensor must not kill the guard; record and go on
                fh.write(orjson.dumps({"error": repr(exc)[:200]}) + b"\n")
                fh.flush()
                quit_event.wait(rules.interval_s)
                continue
            reading.t = round(time.monotonic() - start, 3)
            history.append(reading)
            history = history[-max(rules.gpu_temp_readings, 1) :]
            fh.write(orjson.dumps(reading.model_dump()) + b"\n")
            fh.flush()
            decision = evaluate_rules(rules, history)
            if decision.stop and not stop_event.is_set():
                Path(stop_path).write_bytes(orjson.dumps(decision.model_dump()))
                stop_event.set()
            quit_event.wait(rules.interval_s)


class HealthGuard:
    """Starts and stops the guard process; ``should_stop()`` is cheap to call every step."""

    def __init__(self, rules: GuardRules, out_dir: Path, source: ReadingSource | None = None) -> None:
        self.rules = rules
        self.samples_path = out_dir / "guard.jsonl"
        self.stop_path = out_dir / "stop_reason.json"
        self.source = source or SystemReadings(str(out_dir))
        ctx = mp.get_context("spawn")  # never fork a process that holds torch threads / CUDA
        self._stop = ctx.Event()
        self._quit = ctx.Event()
        self._proc = ctx.Process(
            target=_guard_main,
            daemon=True,
            name="harnessfit-guard",
            args=(self.source, rules, str(self.samples_path), str(self.stop_path), self._stop, self._quit),
        )

    def start(self) -> HealthGuard:
        self.samples_path.parent.mkdir(parents=True, exist_ok=True)
        self.stop_path.unlink(missing_ok=True)
        self._proc.start()
        return self

    def should_stop(self) -> bool:
        return self._stop.is_set()

    def reason(self) -> StopDecision | None:
        if self.stop_path.is_file():
            return StopDecision.model_validate_json(self.stop_path.read_bytes())
        return None

    def close(self) -> None:
        self._quit.set()
        self._proc.join(timeout=10)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join()

    def __enter__(self) -> HealthGuard:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()


def envelope(samples: list[dict], rules: GuardRules) -> list[dict]:
    """Resource envelope rows: average, worst (peak or minimum) and headroom to the stop rule, per quantity."""
    rows = []
    spec = [  # field, label, worst is max?, limit, unit
        ("gpu_temp_c", "GPU temperature", True, rules.gpu_temp_c, "C"),
        ("gpu_power_w", "GPU power", True, None, "W"),
        ("gpu_mem_used_gib", "GPU memory used", True, None, "GiB"),
        ("host_mem_avail_gib", "host memory available", False, rules.min_host_mem_gib, "GiB"),
        ("swap_used_gib", "swap used", True, None, "GiB"),
        ("disk_free_gib", "free disk", False, rules.min_free_disk_gib, "GiB"),
    ]
    for key, label, worst_max, limit, unit in spec:
        vals = [s[key] for s in samples if s.get(key) is not None]
        if not vals:
            continue
        worst = max(vals) if worst_max else min(vals)
        headroom = None if limit is None else (limit - worst if worst_max else worst - limit)
        rows.append(
            {
                "quantity": label,
                "unit": unit,
                "avg": sum(vals) / len(vals),
                "worst": worst,
                "worst_kind": "peak" if worst_max else "min",
                "limit": limit,
                "headroom": headroom,
                "n": len(vals),
            }
        )
    limited = [r for r in rows if r["limit"]]
    if limited:
        closest = min(limited, key=lambda r: r["headroom"] / abs(r["limit"]))
        for r in rows:
            r["closest"] = r is closest
    return rows
