"""``WatcherHost``: what a process running the episode watcher (``watch.py``) offers it.

Apart from the watcher so that a local worker makes one at its start
without loading the watcher, the boundary or the sandbox: a worker that
runs built-in policies only never loads them.
"""


class WatcherHost:
    """What the process running the watcher offers it.

    ``adopted``: the process is a child subreaper (a local worker), so
    orphans of an episode come back to it and are ended with the episode.
    ``announce(leader, live)`` is told when an episode session starts and
    when it has been ended (a local worker tells the command, which ends
    the sessions of a worker that was killed).  ``leader`` is the session
    running now, for a worker's own SIGTERM handler.
    """

    def __init__(self, adopted=False, announce=None):
        self.adopted = adopted
        self.announce = announce
        self.leader = None

    def started(self, leader):
        self.leader = leader
        if self.announce is not None:
            self.announce(leader, True)

    def ended(self, leader):
        self.leader = None
        if self.announce is not None:
            self.announce(leader, False)
