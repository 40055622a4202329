"""The seccomp filter of a sandbox without a user namespace (isolation.md §2, Identity): no user namespace.

Run by root, the sandbox has no user namespace of its own (its mounts are
made with root's rights, then ``setpriv`` drops the identity), and an
unprivileged uid may still make one (Debian allows it): inside it the
policy would be root again.  This filter makes ``unshare`` and ``clone``
with ``CLONE_NEWUSER`` fail with ``EPERM``; ``clone3`` fails with
``ENOSYS``, since its flags are in memory a filter cannot read, so the C
library falls back to ``clone`` (threads and processes still start).
Everything else is allowed; a system call of a foreign architecture (a
32-bit program) kills the process, libseccomp's default.

It is compiled once per process with libseccomp (PyPI ``pyseccomp``, the
``sandbox`` extra, or Debian's ``python3-seccomp``: the same API, over the
system's ``libseccomp2``) and handed to bubblewrap as BPF (``--seccomp FD``).
"""

import contextlib
import ctypes.util
import errno
import importlib
import os

from ..errors import SandboxError

CLONE_NEWUSER = 0x10000000
#: What to install when libseccomp is missing, for the one-line refusal.
MISSING = (
    "libseccomp for Python (pip install 'ember-eval[sandbox]' for pyseccomp, or Debian's python3-seccomp; "
    "both need the system's libseccomp2), which the sandbox run by root needs to keep the policy from "
    "making a user namespace"
)
#: The shared libraries pyseccomp loads, by soname: the dynamic loader finds them at once, where
#: ``ctypes.util.find_library`` runs ``ldconfig -p`` (over 100 ms in every episode process on a loaded machine).
_SONAMES = {"seccomp": "libseccomp.so.2", "c": "libc.so.6"}
_compiled = None


@contextlib.contextmanager
def _sonames():
    real = ctypes.util.find_library
    ctypes.util.find_library = lambda name: _SONAMES.get(name) or real(name)
    try:
        yield
    finally:
        ctypes.util.find_library = real


def _library():
    """The libseccomp binding: pyseccomp, else Debian's seccomp; ``SandboxError`` naming what is missing."""
    reasons = []
    for name in ("pyseccomp", "seccomp"):
        try:
            with _sonames():
                return importlib.import_module(name)
        except (ImportError, OSError, RuntimeError) as exc:  # pyseccomp raises RuntimeError without the library
            reasons.append(f"{name}: {exc}")
    raise SandboxError(f"{MISSING} is not available ({'; '.join(reasons)})")


def no_user_namespace_bpf():
    """The filter as a BPF program (bytes), compiled on first use."""
    global _compiled  # noqa: PLW0603 (one compilation per process: the filter never changes)
    if _compiled is None:
        library = _library()
        try:
            rules = library.SyscallFilter(library.ALLOW)
            newuser = library.Arg(0, library.MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER)
            rules.add_rule(library.ERRNO(errno.EPERM), "unshare", newuser)
            rules.add_rule(library.ERRNO(errno.EPERM), "clone", newuser)
            rules.add_rule(library.ERRNO(errno.ENOSYS), "clone3")
            fd = os.memfd_create("ember-seccomp", os.MFD_CLOEXEC)
            try:
                with open(fd, "wb", closefd=False) as handle:
                    rules.export_bpf(handle)
                size = os.lseek(fd, 0, os.SEEK_END)
                _compiled = os.pread(fd, size, 0)
            finally:
                os.close(fd)
        except (OSError, RuntimeError, ValueError) as exc:
            raise SandboxError(f"libseccomp cannot build the sandbox's seccomp filter: {exc}") from None
    return _compiled
