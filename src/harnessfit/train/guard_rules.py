"""Stop rules of the health guard (kept apart from the recipe so the guard process imports nothing heavy)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["GuardRules"]


class GuardRules(BaseModel):
    """Stop rules of the health guard. A rule that fires stops training gracefully (checkpoint saved, reason written,
    non-zero exit). Thresholds are set where hardware gets damaged or the run would die anyway, not where it is slow."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(True, description="Run the health guard process beside the trainer.")
    interval_s: float = Field(30.0, gt=0, description="Seconds between two readings.")
    gpu_temp_c: float = Field(84.0, description="Stop when GPU temperature is at or above this (degrees C) ...")
    gpu_temp_readings: int = Field(2, ge=1, description="... for this many consecutive readings.")
    min_host_mem_gib: float = Field(4.0, description="Stop when host available memory falls below this (GiB).")
    min_free_disk_gib: float = Field(
        20.0, description="Stop when free disk at the output folder falls below this (GiB)."
    )
