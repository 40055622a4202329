"""Environment arguments checked at construction, naming the argument."""

import pytest

from ember.errors import EnvConfigError

pytest.importorskip("gymnasium")
pytest.importorskip("pettingzoo")

from ember.envs import parallel_env  # noqa: E402
from ember.envs.gym_env import EvacuationEnv  # noqa: E402
from ember.envs.parallel import MAX_WINDOW  # noqa: E402


@pytest.mark.parametrize("make", [EvacuationEnv, parallel_env], ids=["gymnasium", "pettingzoo"])
@pytest.mark.parametrize("template", ["x-{seed:zz}.record", "x-{episode:c}.record", "x-{seed:=^-5.3%Q}"])
def test_a_bad_format_spec_is_refused_at_construction(tmp_path, make, template):
    with pytest.raises(EnvConfigError) as raised:
        make(scenario="builtin:small-room", record=str(tmp_path / template))
    assert str(raised.value).startswith(f"record: bad template {str(tmp_path / template)!r}: ")


@pytest.mark.parametrize("make", [EvacuationEnv, parallel_env], ids=["gymnasium", "pettingzoo"])
def test_a_good_format_spec_still_writes_its_files(tmp_path, make):
    env = make(scenario="builtin:small-room", record=str(tmp_path / "r-{seed:06d}-{episode}.record"))
    env.reset(seed=7)
    env.close()
    assert [p.name for p in tmp_path.iterdir()] == ["r-000007-0.record"]


@pytest.mark.parametrize("window", [MAX_WINDOW + 2, 999999, 2**40 + 1])
def test_a_window_too_large_is_refused_at_construction(window):
    with pytest.raises(EnvConfigError) as raised:
        parallel_env(scenario="builtin:small-room", window=window)
    assert str(raised.value) == (
        f"window: expected an odd integer from 1 to {MAX_WINDOW} (each agent's observation holds "
        f"4 x window x window bytes at every step), got {window}."
    )


def test_the_largest_window_works():
    env = parallel_env(scenario="builtin:small-room", window=MAX_WINDOW)
    observations, _ = env.reset(seed=0)
    assert {o.shape for o in observations.values()} == {(4, MAX_WINDOW, MAX_WINDOW)}
