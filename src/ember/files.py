"""Writing output files so that no reader ever sees a partial result."""

import os


def write_atomically(path, save):
    """Call ``save(tmp)``, then rename ``tmp`` over ``path``.

    ``path`` holds either its old content or the complete new one, and the
    temporary file never lingers.  An ``OSError`` names ``path``, not the
    temporary file.
    """
    path = os.fspath(path)
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        save(tmp)
        os.replace(tmp, path)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror or str(exc), path) from exc
    finally:
        if os.path.lexists(tmp):
            os.remove(tmp)
