"""The commands that write inputs: generate (a scenario of a family), suite (a campaign file)."""

import argparse

from . import arguments
from .outputs import write_result


def family_parameters(parser):
    """One option per family parameter (the union over families); each family refuses the ones it lacks."""
    from ..generate import FAMILIES

    seen = {}
    for family in FAMILIES:
        for parameter in family.parameters:
            seen.setdefault(parameter.name, (parameter, []))[1].append(family.name)
    for name, (parameter, families) in seen.items():
        takers = "all families" if len(families) == len(FAMILIES) else ", ".join(families)
        defaults = {f.name: p.default for f in FAMILIES for p in f.parameters if p.name == name}
        if len(set(defaults.values())) > 1:
            shown = ", ".join(f"{k} {v}" for k, v in defaults.items())
        else:
            shown = next(iter(defaults.values()))
        bounds = f" ({parameter.low}-{parameter.high})" if parameter.kind is int else ""
        parser.add_argument(
            f"--{name.replace('_', '-')}",
            dest=f"param_{name}",
            type=parameter.kind,
            default=argparse.SUPPRESS,
            metavar="N" if parameter.kind is int else "TEXT",
            help=f"{parameter.help}{bounds}; {takers}; default: {shown}",
        )


def generate_arguments(generate):
    generate.add_argument("family", metavar="FAMILY", nargs="?", help="the family to generate")
    generate.add_argument("--list", action="store_true", help="list the families, one a line, and exit")
    arguments.add_seed(generate, "generator seed, 0 <= N < 2^64 (required)")
    generate.add_argument("--id", type=arguments.identifier, help="the scenario ID (default: FAMILY-SEED)")
    arguments.add_output(generate, "write the scenario here instead of standard output")
    family_parameters(generate)


def generate_writes_stdout(args):
    return args.list or arguments.without_output_file(args)


def cmd_generate(args, console):
    from ..generate import FAMILIES, generate_bytes

    if args.list:
        if args.family is not None or args.seed is not None:
            return console.fail("--list takes no FAMILY or --seed.")
        width = max(len(f.name) for f in FAMILIES)
        for family in FAMILIES:
            console.line(f"{family.name:<{width}}  {family.description}")
        return 0
    if args.family is None:
        return console.fail("give a FAMILY (see 'ember generate --list').")
    if args.seed is None:
        return console.fail("give the generator seed with --seed N.")
    given = {name: value for name, value in vars(args).items() if name.startswith("param_")}
    given = {name[len("param_") :]: value for name, value in given.items()}
    write_result(console, args.output, generate_bytes(args.family, args.seed, args.id, **given))
    return 0


def suite_arguments(suite):
    from ..generate.suite import CAMPAIGN_SEEDS, TIER_NAMES

    suite.add_argument("suite", metavar="SUITE", help="the suite, e.g. ember-v1")
    suite.add_argument("--tier", choices=TIER_NAMES, help="only the scenarios of this tier")
    per_tier = ", ".join(f"{tier} {count}" for tier, count in CAMPAIGN_SEEDS.items())
    suite.add_argument(
        "--seeds", type=arguments.count(1), metavar="N", help=f"seeds 0..N-1 for every scenario (default: {per_tier})"
    )
    suite.add_argument(
        "--scenario",
        action="append",
        metavar="NAME",
        dest="scenarios",
        help="only this scenario (repeatable): NAME as in builtin:SUITE/NAME, e.g. small-office-block",
    )
    arguments.add_output(suite, "write the campaign file here instead of standard output")


def cmd_suite(args, console):
    from ..generate.suite import campaign_toml

    text = campaign_toml(args.suite, args.tier, args.seeds, args.scenarios)
    write_result(console, args.output, text.encode("utf-8"))
    return 0
