"""The environment of a sandboxed policy (isolation.md §2, Environment): fixed, plus the policy's own ``env``."""

FIXED_ENVIRONMENT = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/tmp",
    "TMPDIR": "/tmp",
    "LANG": "C.UTF-8",
    "PYTHONHASHSEED": "0",
    "PYTHONDONTWRITEBYTECODE": "1",
    # numpy/OpenBLAS start a thread per core otherwise, and threads count against max_processes.
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}


def policy_environment(env=None):
    """The whole environment of a policy: its ``env`` table and the fixed variables, which it cannot replace.

    A campaign refuses an ``env`` naming a fixed variable up front; here they win whatever is asked.
    """
    return {**(env or {}), **FIXED_ENVIRONMENT}
