"""A verifying process's START imports nothing: every class its argument names is loaded by the fork server
before it forks (``state.VERIFIER_PRELOAD``).  An import there is paid by every upload, in its own process
(the record store's module and SQLAlchemy were once: about 0.3 s an upload)."""

import json
import pickle
import subprocess
import sys

from ember.scenario import compile_scenario
from ember.service.config import read_config
from ember.service.state import VERIFIER_PRELOAD
from ember.service.store import RecordStore

CHECK = """
import importlib, pickle, sys
for name in {preload!r}:
    importlib.import_module(name)
before = set(sys.modules)
pickle.loads(sys.stdin.buffer.read())
print(sorted(set(sys.modules) - before))
"""


def test_the_start_argument_unpickles_in_the_fork_server_without_an_import(service):
    config = read_config(service.data)
    scenario = compile_scenario("builtin:office")
    store = RecordStore(config.records)
    for known in (None, (store.path("00/" + "0" * 64 + ".record"), "0" * 64, "another record")):
        argument = pickle.dumps((scenario, 0, config.limits, store, known))
        done = subprocess.run([sys.executable, "-c", CHECK.format(preload=VERIFIER_PRELOAD)], input=argument,
                              capture_output=True, check=True)  # fmt: skip
        assert json.loads(done.stdout.decode().replace("'", '"')) == [], done.stdout
