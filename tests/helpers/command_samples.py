"""A minimal valid invocation of every command of the table (tests/cli/test_commands.py, tests/cli/test_parser.py)."""

SCENARIO = "builtin:small-room"


def _out(out):
    return [] if out is None else ["-o", out]


#: A minimal valid invocation of each command: ``SAMPLES[name](inputs, out)`` is its argv; ``out`` is the
#: value of its output-path option, or None for the invocation without one (its result on stdout, when
#: the command can write there).
SAMPLES = {
    "run": lambda i, out: ["run", SCENARIO, *_out(out)],
    "metrics": lambda i, out: ["metrics", SCENARIO, i.record, *_out(out)],
    "replay": lambda i, out: ["replay", SCENARIO, i.record],
    "demo": lambda i, out: ["demo", "--scenario", SCENARIO, *_out(out)],
    "render": lambda i, out: ["render", SCENARIO, i.record, *(["--ascii"] if out is None else ["-o", out])],
    "trajectories": lambda i, out: ["trajectories", SCENARIO, i.record, *_out(out)],
    "bounds": lambda i, out: ["bounds", SCENARIO, "--seed", "0", *_out(out)],
    "scenarios": lambda i, out: ["scenarios"],
    "rank": lambda i, out: ["rank", i.results, *_out(out)],
    "stats": lambda i, out: ["stats", i.results, "--replicates", "1000", *_out(out)],
    "report": lambda i, out: ["report", i.results, *_out(out)],
    "evaluate": lambda i, out: ["evaluate", i.campaign, "-o", i.results_copy() if out is None else out],
    "export": lambda i, out: ["export", i.results, *_out(out)],
    # The sample's rows keep no record: unverifiable, which passes only when allowed (isolation.md §3).
    "verify": lambda i, out: ["verify", i.results, "--campaign", i.campaign, "--allow-unverifiable"],
    "generate": lambda i, out: ["generate", "office", "--seed", "1", *_out(out)],
    "suite": lambda i, out: ["suite", "ember-v1", *_out(out)],
    "service": lambda i, out: ["service", "reverify", i.service.data, "office"],
    "submit": lambda i, out: [
        "submit",
        i.service.url,
        "office",
        "--token-file",
        i.service.token_file,
        "--policy",
        "greedy",
        i.service.source,
    ],
    "jobs": lambda i, out: ["jobs", i.service.url, "--token-file", i.service.token_file, i.service.job],
}
