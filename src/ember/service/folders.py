"""Where a board's derived versions live (``DATA/derived/<board>/``) and which is the newest: shared by the
deriver that writes them, the export that may copy their numbers, and the endpoints and pages that read them."""

import os

NONE_SUFFIX = ".none"


def board_folder(config, name, track="open"):
    # A hidden key set's versions sit in a folder of the open track's: ``latest`` skips its non-numeric name.
    folder = os.path.join(config.derived, name)
    return folder if track == "open" else os.path.join(folder, track)


def latest(config, name, track="open"):
    """(version, its folder or None when nothing is ranked) of the newest derived version, or None."""
    folder = board_folder(config, name, track)
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return None
    found = []
    for entry in names:
        stem = entry[: -len(NONE_SUFFIX)] if entry.endswith(NONE_SUFFIX) else entry
        if stem.isdigit():
            found.append((int(stem), None if entry.endswith(NONE_SUFFIX) else os.path.join(folder, entry)))
    return max(found) if found else None
