"""Campaigns (campaign.md): many policies on many episodes, locally or on a Dask cluster."""

from .evaluate import Summary, Terminated, evaluate
from .spec import load_campaign

__all__ = ["Summary", "Terminated", "evaluate", "load_campaign"]
