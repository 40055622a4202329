"""``DATA/service.toml``'s shared store (``record_store``) and the hidden track's Dask scheduler
(``[evaluation] scheduler``): where each file goes, and every bad value refused naming its key."""

import os

import pytest

from ember.errors import ServiceError
from ember.service.config import read_config
from ember.service.registry import init_service

from helpers.service import ember


@pytest.fixture
def data(tmp_path):
    path = str(tmp_path / "DATA")
    init_service(path)
    return path


def with_lines(data, top="", tail=""):
    path = os.path.join(data, "service.toml")
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(top + text + tail)


def test_without_a_store_everything_is_in_data_and_with_one_the_shared_files_are_in_it(data, tmp_path):
    config = read_config(data)
    assert (config.shared, config.records, config.derived) == (
        data, os.path.join(data, "records"), os.path.join(data, "derived")
    )  # fmt: skip
    assert config.scheduler is None
    store = str(tmp_path / "store")
    with_lines(data, top=f'record_store = "{store}"\n', tail='\n[evaluation]\nscheduler = "tcp://127.0.0.1:8786"\n')
    config = read_config(data)
    assert (config.shared, config.records, config.derived) == (
        store, os.path.join(store, "records"), os.path.join(store, "derived")
    )  # fmt: skip
    assert config.scheduler == "tcp://127.0.0.1:8786"
    init_service(data)  # init makes the store's record folder, the operator's alone
    assert os.stat(store).st_mode & 0o777 == 0o700 and os.stat(config.records).st_mode & 0o777 == 0o700


@pytest.mark.parametrize(
    ("top", "tail", "expected"),
    [
        (
            'record_store = "relative/store"\n',
            "",
            "record_store: expected an absolute path (a string), got 'relative/store'",
        ),
        ("record_store = 3\n", "", "record_store: expected an absolute path (a string), got 3"),
        ("", '\n[evaluation]\nscheduler = "localhost"\n', "evaluation.scheduler: expected a Dask scheduler's address"),
        ("", "\n[evaluation]\nscheduler = 8786\n", "evaluation.scheduler: expected a Dask scheduler's address"),
        ("", "\n[evaluation]\nworkers = 3\n", "evaluation.workers: unknown key; expected 'scheduler'"),
        ('evaluation = "tcp://x:1"\n', "", "evaluation: expected a table"),
        ('stores = "/x"\n', "", "stores: unknown key; expected one of 'database', 'record_store', 'limits'"),
    ],
)
def test_a_bad_store_or_scheduler_is_refused_naming_the_key(data, top, tail, expected):
    with_lines(data, top=top, tail=tail)
    with pytest.raises(ServiceError) as refused:
        read_config(data)
    assert str(refused.value).startswith(os.path.join(data, "service.toml") + ": " + expected), str(refused.value)
    done = ember("service", "serve", data, "--port", "9", check=False, timeout=60)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.count("\n") == 1 and expected in done.stderr, done.stderr


def test_serve_refuses_a_store_that_group_or_others_can_read(data, tmp_path):
    store = tmp_path / "store"
    with_lines(data, top=f'record_store = "{store}"\n')
    init_service(data)
    os.chmod(store, 0o755)
    done = ember("service", "serve", data, "--port", "9", check=False, timeout=60)
    assert (done.returncode, done.stdout) == (2, "")
    assert f"{store}: group or others can read it (mode 0755)" in done.stderr, done.stderr
