"""Stadium scale: the generator accepts grids up to 1,000x1,000 and 50,000 people.

Every family's ``--rows``/``--cols`` go to 1,000 and ``--people`` to 50,000
(one more is refused with the usual one-line error); a generated floor at
those sizes is a valid scenario that the simulator and the metrics take.
"""

import pytest

from ember.engine.run import measure_run
from ember.errors import GenerationError
from ember.generate.families import FAMILY_NAMES, generate, resolve_parameters
from ember.scenario import validate_scenario


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_every_family_takes_stadium_sizes_and_refuses_one_more(family):
    params = resolve_parameters(family, {"rows": 1000, "cols": 1000, "people": 50_000})
    assert (params["rows"], params["cols"], params["people"]) == (1000, 1000, 50_000)
    for name, value in (("rows", 1001), ("cols", 1001), ("people", 50_001)):
        with pytest.raises(GenerationError, match=f"{family} --{name}: expected an integer from 1?2? to"):
            resolve_parameters(family, {name: value})


def test_a_hall_of_a_thousand_rows_is_generated_and_measured():
    scenario = generate("hall", 7, rows=1000, cols=14, people=2000, pillars=0, exits=8, max_steps=30)
    assert scenario["grid"] == {"rows": 1000, "cols": 14} and len(scenario["people"]) == 2000
    assert validate_scenario(scenario) == scenario
    result = measure_run(scenario, "greedy", 1)
    metrics = getattr(result, "metrics", result)
    assert metrics["safety"]["population"] == 2000


def test_fifty_thousand_people_fit_a_large_hall():
    scenario = generate("hall", 3, rows=260, cols=260, people=50_000, pillars=0, exits=16, door=5)
    assert len(scenario["people"]) == 50_000
    assert validate_scenario(scenario) == scenario
