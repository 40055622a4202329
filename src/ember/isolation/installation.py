"""What of this machine a sandboxed policy sees, read-only (isolation.md §2, Files it sees).

The system: ``/usr`` and the ``/bin``, ``/lib*``, ``/sbin`` links, and an
allowlist of ``/etc``.  The Python installation: ``sys.base_prefix``,
``sys.prefix`` (a virtual environment) and the source roots of packages
installed in editable mode (a path line of a ``.pth`` file in
site-packages, or the ``MAPPING`` of a setuptools ``__editable__`` finder),
each at its own absolute path, so the interpreter running EMBER runs the
host and every package of its environment inside the sandbox.
"""

import ast
import contextlib
import os
import sys

#: From /etc, only these (a generated passwd and group are added by the sandbox).
ETC_ALLOWLIST = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "nsswitch.conf", "ssl/certs")
#: The top-level names of / that are the system's programs and libraries (links into /usr on merged systems).
SYSTEM_LINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")


def system_entries(root="/"):
    """[(name, link target or None)] of the /bin, /lib*, /sbin entries of this machine."""
    found = []
    for name in SYSTEM_LINKS:
        path = os.path.join(root, name)
        if os.path.islink(path):
            found.append((path, os.readlink(path)))
        elif os.path.isdir(path):
            found.append((path, None))
    return found


def etc_entries():
    """The allowlisted /etc paths that exist here."""
    return [path for path in (os.path.join("/etc", name) for name in ETC_ALLOWLIST) if os.path.lexists(path)]


def _site_folders():
    folders = []
    for prefix in {sys.prefix, sys.base_prefix}:
        lib = os.path.join(prefix, "lib")
        with contextlib.suppress(OSError):
            for name in os.listdir(lib):
                site = os.path.join(lib, name, "site-packages")
                if name.startswith("python") and os.path.isdir(site):
                    folders.append(site)
    return folders


def _finder_roots(path):
    """The source folders a setuptools ``__editable__`` finder maps packages to (read, never run)."""
    roots = []
    with contextlib.suppress(OSError, SyntaxError, ValueError):
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
        for node in tree.body:
            target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
            if isinstance(node, ast.AnnAssign):
                target = node.target
            if isinstance(target, ast.Name) and target.id == "MAPPING" and node.value is not None:
                for folder in ast.literal_eval(node.value).values():
                    roots.append(os.path.dirname(folder) if os.path.isfile(folder) else folder)
    return roots


def editable_roots():
    """The source roots of the packages installed in editable mode in this interpreter's environment."""
    roots = []
    for site in _site_folders():
        with contextlib.suppress(OSError):
            names = sorted(os.listdir(site))
        for name in names:
            path = os.path.join(site, name)
            if name.endswith(".pth"):
                with contextlib.suppress(OSError, UnicodeDecodeError), open(path, encoding="utf-8") as handle:
                    for line in handle:
                        line = line.strip()
                        if line and not line.startswith(("#", "import ", "import\t")):
                            folder = os.path.normpath(os.path.join(site, line))
                            if os.path.isdir(folder):
                                roots.append(folder)
            elif name.startswith("__editable__") and name.endswith("_finder.py"):
                roots.extend(_finder_roots(path))
    return roots


def _covered(path, by):
    return any(path == other or path.startswith(other.rstrip("/") + "/") for other in by)


def python_paths():
    """The folders of the Python installation to bind, outermost first, none inside another (nor in /usr)."""
    candidates = [sys.base_prefix, sys.base_exec_prefix, sys.prefix, sys.exec_prefix, *editable_roots()]
    executable = os.path.realpath(sys.executable)
    candidates.append(os.path.dirname(executable))
    expanded = []
    for path in candidates:
        for form in (os.path.abspath(path), os.path.realpath(path)):
            if form not in expanded:
                expanded.append(form)
    chosen = []
    for path in sorted(expanded, key=len):
        if not _covered(path, ["/usr", *chosen]) and path != "/":
            chosen.append(path)
    return chosen


_THIS_INTERPRETER = []


def this_interpreter():
    """``python_paths()`` of this process, read once: they never change while it runs, and a sandbox is
    made per episode (reading them was a millisecond of every episode, most of it ``editable_roots``).
    ``ember.isolation.boundary`` reads them when it is imported, so the episode processes a worker forks
    inherit them."""
    if not _THIS_INTERPRETER:
        _THIS_INTERPRETER.append(tuple(python_paths()))
    return list(_THIS_INTERPRETER[0])
