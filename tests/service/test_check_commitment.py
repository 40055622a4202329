"""``ember service check-commitment`` before the reveal: the real reason, from a real server."""

import pytest

from helpers.hidden import HiddenService
from helpers.service import ember


@pytest.fixture
def unrevealed():
    made = HiddenService(hidden_seeds=1, teams=())
    made.serve()
    yield made
    made.close()


def test_before_the_reveal_the_check_says_the_board_is_not_revealed_yet(unrevealed):
    checked = ember("service", "check-commitment", unrevealed.server.url, "office", check=False)
    assert checked.returncode == 2
    assert checked.stdout == ""
    assert checked.stderr == "ember: board 'office': the hidden track is not revealed yet: nothing to check\n"


def test_a_board_without_a_hidden_track_is_said_so(unrevealed):
    ember("service", "board", "add", unrevealed.data, "plain", "--campaign", unrevealed.write("p.toml", OPEN))
    checked = ember("service", "check-commitment", unrevealed.server.url, "plain", check=False)
    assert (checked.returncode, checked.stdout) == (2, "")
    assert checked.stderr == "ember: board 'plain': has no hidden track\n"


OPEN = 'campaign = "plain"\nseeds = [0]\nscenarios = ["builtin:office"]\n'
