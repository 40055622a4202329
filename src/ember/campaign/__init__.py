"""Campaigns (campaign.md): many policies on many episodes, locally or on a Dask cluster.

``evaluate``, ``Summary``, ``Terminated`` and ``load_campaign`` are loaded
when first asked for: an episode process started afresh imports
``ember.campaign.episode_process`` and pays for nothing else of the part.
"""

_PUBLIC = {"Summary": "driver", "Terminated": "driver", "evaluate": "driver", "load_campaign": "campaign_file"}

__all__ = sorted(_PUBLIC)


def __getattr__(name):
    if name not in _PUBLIC:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    module = importlib.import_module(f"{__name__}.{_PUBLIC[name]}")
    for public, home in _PUBLIC.items():  # its siblings too: one import, every name it gives
        if home == _PUBLIC[name]:
            globals()[public] = getattr(module, public)
    return globals()[name]
