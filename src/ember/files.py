"""Output files (every ``-o``): what is there decides how it is written.

One entry point, ``output_file(path, live=...)``, a context manager that
yields a binary stream.  What ``path`` names decides what happens:

- a symlink is followed: the link stays a link and its target is written
  as below (a dangling link creates its target);
- an existing node that is not a regular file (a FIFO, ``/dev/null``, a
  device, a terminal) is written through, never replaced;
- a regular file, or a new path, gets its content complete or not at all:
  the stream is a temporary file in the same directory, renamed over the
  target when the ``with`` block ends without an exception, removed if it
  raises.

``live=True`` is for records streamed while an episode runs (``ember run
-o``), which must stay followable, must not destroy an existing record if
the run fails, and must not be written by two processes at once:

- a new path is created exclusively, already locked (``flock``), and
  written in place, so ``tail -f PATH`` follows it; if the run fails, the
  unterminated record written so far stays (``ember metrics`` calls it
  truncated);
- an existing regular file is locked and left untouched while the run is
  written to the visible sibling ``PATH.partial`` (followable too), which
  replaces it only when the run succeeds and is removed if it fails;
- a path another live writer holds is refused with ``OutputBusyError``.

Several outputs of one command (``ember trajectories -o T --geometry G``)
are written through ``output_files(*paths)``: every regular file's
temporary is renamed into place only once every stream has been written
and closed without error, so a failure of any one of them (a full disk,
``/dev/full``, a path that cannot be made) leaves none of them written.

An empty path names no file: ``OutputPathError`` (a ``ValueError``),
before anything is made.

See docs/decisions.md ("Output files").
"""

import contextlib
import errno
import io
import os
import stat

from .errors import OutputBusyError, OutputPathError, ResultsIOError

PARTIAL_SUFFIX = ".partial"


@contextlib.contextmanager
def output_file(path, *, live=False):
    """A binary stream for writing ``path`` as described in the module docstring."""
    with _output(path, live, None) as stream:
        yield stream


@contextlib.contextmanager
def output_files(*paths, last=None):
    """Binary streams for several output ``paths`` (a list, in order), written together or not at all.

    Each is opened as ``output_file`` opens one (``live`` excepted); none is
    renamed into place until the ``with`` block has ended without an
    exception and every stream has been flushed and closed, so whichever
    fails to be written, no regular file among them is new or changed.  A
    node written through (a FIFO, a device) is flushed before any rename,
    but what it took cannot be taken back.  ``last()``, when given, runs
    after every stream is closed and before any rename (a result copied to
    standard output): what it raises leaves nothing renamed either.  A
    rename that fails after others succeeded (the folder removed in
    between) removes the files this call created; one it replaced stays
    replaced.  Every error names the path it concerns.
    """
    renames = []  # (temporary, target, shown, existed) of each regular file, once its stream is closed
    done = []
    try:
        with contextlib.ExitStack() as stack:
            streams = [stack.enter_context(_output(path, False, renames)) for path in paths]
            yield streams
        if last is not None:
            last()
        for tmp, target, shown, existed in renames:
            try:
                os.replace(tmp, target)
            except OSError as exc:
                raise _named(exc, shown) from exc
            done.append((target, existed))
    except BaseException:
        for target, existed in done:  # a later rename failed: take back the files this call made
            if not existed:
                _discard(target)
        raise
    finally:
        for tmp, *_ in renames:
            _discard(tmp)


@contextlib.contextmanager
def _output(path, live, renames):
    """``output_file``; with a list ``renames``, a regular file's rename is left to the caller (``output_files``)."""
    if not os.fspath(path):
        raise OutputPathError("'': an empty path names no file; give a file name")
    target = _follow_links(os.fspath(path))
    try:
        info = os.stat(target)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise _named(exc, path) from exc
    if info is not None and not stat.S_ISREG(info.st_mode):
        with _write_through(target, path) as stream:
            yield stream
    elif live:
        with _live(target, path) as stream:
            yield stream
    else:
        with _atomic(target, path, info, renames) as stream:
            yield stream


def fsync_directory(path):
    """Make the entries of folder ``path`` (a file made or renamed there) durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path, save):
    """Call ``save(stream)`` with a binary stream for ``path`` (see ``output_file``)."""
    with output_file(path) as stream:
        save(stream)


def replace_file(path, data, *, mode=0o666, durable=False):
    """``data`` (bytes) as the whole of regular file ``path``, complete or not at all: written to a new
    temporary sibling (created with ``mode``, less the umask) renamed over ``path``.  ``durable``: the file,
    then its folder, fsynced, so a machine that stops keeps the old file or the new one."""
    tmp, fd = _create_sibling(path, "tmp", mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, path)
        tmp = None
    finally:
        if tmp is not None:
            _discard(tmp)
    if durable:
        fsync_directory(os.path.dirname(path) or ".")


def _follow_links(path):
    """The path a chain of symlinks at ``path`` ends at (``path`` itself if it is no link)."""
    if not os.path.islink(path):
        return path
    return os.path.realpath(path)


def _named(exc, path):
    """``exc`` as an ``OSError`` naming ``path`` (the user's name, not a temporary file's)."""
    return OSError(exc.errno, exc.strerror or str(exc), os.fspath(path))


class NamedFileIO(io.FileIO):
    """A raw output file whose write and close errors name the user's path (a full disk, ``/dev/full``).

    Every byte of a buffered stream reaches the disk through ``write`` here,
    so an ``OSError`` from any layer above (a buffer's flush, a compressor)
    already carries the path, whichever temporary file is really written.
    """

    def __init__(self, fd, shown):
        super().__init__(fd, "wb")
        self.shown = os.fspath(shown)

    def write(self, data):
        try:
            return super().write(data)
        except OSError as exc:
            raise _named(exc, self.shown) from exc

    def close(self):
        try:
            super().close()
        except OSError as exc:
            raise _named(exc, self.shown) from exc


def _stream(fd, shown):
    """A buffered binary stream writing ``fd``, its errors naming ``shown``."""
    return io.BufferedWriter(NamedFileIO(fd, shown))


@contextlib.contextmanager
def _write_through(target, shown):
    """Write into an existing non-regular node: no creation, no truncation, no rename."""
    try:
        stream = _stream(os.open(target, os.O_WRONLY), shown)
    except OSError as exc:
        raise _named(exc, shown) from exc
    with stream:
        yield stream


def _create_sibling(target, tag, mode=0o666, flags=os.O_WRONLY | os.O_CREAT | os.O_EXCL):
    """Create a new file next to ``target`` exclusively (``flags``); returns (path, fd)."""
    folder, name = os.path.split(target)
    for attempt in range(100):
        sibling = os.path.join(folder, f".{name}.{tag}{os.getpid()}.{attempt}")
        try:
            return sibling, os.open(sibling, flags, mode)
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "cannot create a temporary file next to it", target)


def _discard(path):
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)


@contextlib.contextmanager
def _atomic(target, shown, info, renames=None):
    """A temporary sibling renamed over ``target`` on success (or, with a list ``renames``, left there for the
    caller to rename, listed in it), removed on failure."""
    try:
        tmp, fd = _create_sibling(target, "tmp")
    except OSError as exc:
        raise _named(exc, shown) from exc
    try:
        # What the block raises passes as it is (a record that cannot be read names the record, not this
        # file); the stream's own write and close errors already name ``shown`` (``NamedFileIO``).
        with _stream(fd, shown) as stream:
            yield stream
        try:
            if info is not None:  # a replaced file keeps its permissions
                os.chmod(tmp, stat.S_IMODE(info.st_mode))
            if renames is None:
                os.replace(tmp, target)
            else:
                renames.append((tmp, target, shown, info is not None))
                tmp = None  # the caller renames or removes it
        except OSError as exc:
            raise _named(exc, shown) from exc
    finally:
        if tmp is not None:
            _discard(tmp)


def _lock(fd, shown):
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise OutputBusyError(
            f"{os.fspath(shown)}: another process is writing this record (it holds the lock); not written."
        ) from None


@contextlib.contextmanager
def _live(target, shown):
    """Stream a record to ``target``: in place when it is new, through ``.partial`` when it exists."""
    try:
        fd, existing = _claim(target, shown)
    except OutputBusyError:
        raise
    except OSError as exc:
        raise _named(exc, shown) from exc
    if existing is None:
        with _stream(fd, shown) as stream:
            yield stream  # a failure leaves the unterminated record in place, as documented
        return
    # ``fd`` holds the lock on the existing record until it has been replaced: a writer
    # that locks it after the rename finds it is no longer the file at ``target`` and retries.
    with open(fd, "rb"):
        partial = target + PARTIAL_SUFFIX
        try:
            _discard(partial)  # left by a run that was killed; we hold the target's lock
            out = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except OSError as exc:
            raise _named(exc, partial) from exc
        try:
            with _stream(out, shown) as stream:
                yield stream
            os.chmod(partial, stat.S_IMODE(existing.st_mode))
            os.replace(partial, target)
        except BaseException:
            _discard(partial)
            raise


def _claim(target, shown):
    """Lock ``target`` for writing: (fd, None) if it was new (created locked), (fd, stat) if it exists."""
    for _ in range(100):
        tmp, fd = _create_sibling(target, "new")
        try:
            _lock(fd, shown)
            # link() fails if ``target`` exists, so other writers never see it new and unlocked.
            os.link(tmp, target)
            return fd, None
        except FileExistsError:
            os.close(fd)
        except BaseException:
            os.close(fd)
            raise
        finally:
            _discard(tmp)
        try:
            fd = os.open(target, os.O_RDONLY)
        except FileNotFoundError:
            continue  # removed in between: try again
        try:
            _lock(fd, shown)
            info, now = os.fstat(fd), os.stat(target)
        except FileNotFoundError:
            os.close(fd)
            continue
        except BaseException:
            os.close(fd)
            raise
        if (now.st_dev, now.st_ino) == (info.st_dev, info.st_ino):
            return fd, info  # the locked file is still the one at ``target``
        os.close(fd)
    raise OutputBusyError(f"{os.fspath(shown)}: the file keeps changing while it is being locked; not written.")


# -- safe files: never through a link --------------------------------------------------------
#
# The files of a directory EMBER writes into (a results directory, a campaign's logs and records):
# a link planted in place of a file or a folder of it is refused with a one-line ``ResultsIOError``
# naming it, never written through (isolation.md §3); only ``directory`` itself may be a link.


LINKED = "is a symbolic link: EMBER writes no file of a results directory through a link"
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _linked(path):
    return ResultsIOError(errno.ELOOP, LINKED, path)


# -- safe files --------------------------------------------------------------------------


def make_folder(directory, relative):
    """``directory/relative`` as a folder, each part made if missing and refused if it is a link or a file.

    ``directory`` itself (the one path the operator gave) is made if
    missing, and may be a link.  Returns the folder's path.  An error is a
    ``ResultsIOError`` naming the part.
    """
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as exc:
        raise ResultsIOError(exc.errno, exc.strerror or str(exc), directory) from None
    path = directory
    for part in os.path.normpath(relative).split(os.sep):
        if part in ("", "."):
            continue
        path = os.path.join(path, part)
        try:
            os.mkdir(path)
            continue
        except FileExistsError:
            pass
        except OSError as exc:
            raise ResultsIOError(exc.errno, exc.strerror or str(exc), path) from None
        try:
            info = os.lstat(path)
        except OSError as exc:
            raise ResultsIOError(exc.errno, exc.strerror or str(exc), path) from None
        if stat.S_ISLNK(info.st_mode):
            raise _linked(path)
        if not stat.S_ISDIR(info.st_mode):
            raise ResultsIOError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), path)
    return path


def create_new(path, shown=None):
    """A new file at ``path`` opened for writing (exclusively, never through a link); its fd.

    ``shown``: the path an error names (the file the temporary one becomes).
    """
    try:
        return os.open(path, _NEW, 0o666)
    except OSError as exc:
        raise ResultsIOError(exc.errno, exc.strerror or str(exc), shown or path) from None


def replace_into(tmp, target):
    """Rename the finished ``tmp`` to ``target``; a link at ``target`` is refused (``ResultsIOError``)."""
    try:
        if os.path.islink(target):
            raise _linked(target)
        os.replace(tmp, target)
    except ResultsIOError:
        raise
    except OSError as exc:
        raise ResultsIOError(exc.errno, exc.strerror or str(exc), target) from None


def write_fd(fd, data, shown):
    """Write all of ``data`` to ``fd`` and fsync it; an error is a ``ResultsIOError`` naming ``shown``."""
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except OSError as exc:
        raise ResultsIOError(exc.errno, exc.strerror or str(exc), shown) from None


def write_file(directory, name, data):
    """Write ``data`` (bytes) to ``directory/name`` atomically (a temporary sibling renamed over it).

    ``name`` is relative to ``directory`` (a results directory's
    ``RANKING_FILE``, ``scenario_file(id)``); its folders are made with ``make_folder``.  A
    link at the target or a folder on its way is refused; an existing
    file keeps its permissions.  Errors are ``ResultsIOError`` naming the target.
    """
    folder = make_folder(directory, os.path.dirname(name))
    target = os.path.join(folder, os.path.basename(name))
    mode = None
    try:
        info = os.lstat(target)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise ResultsIOError(exc.errno, exc.strerror or str(exc), target) from None
    if info is not None:
        if stat.S_ISLNK(info.st_mode):
            raise _linked(target)
        mode = stat.S_IMODE(info.st_mode)
    try:  # the temporary names of every atomic output (``_create_sibling``): a run's sweep knows them
        tmp, fd = _create_sibling(target, "tmp", flags=_NEW)
    except OSError as exc:
        raise ResultsIOError(exc.errno, exc.strerror or str(exc), target) from None
    try:
        try:
            write_fd(fd, data, target)
            if mode is not None:
                os.fchmod(fd, mode)
        finally:
            os.close(fd)
        replace_into(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        if isinstance(exc, ResultsIOError):
            raise
        raise ResultsIOError(exc.errno, exc.strerror or str(exc), target) from None
