# Settings and op specs: checked once, before any job runs, with errors naming the op and field.
import json

from snakemake.utils import validate

from autoperfect import backends
from autoperfect.pipeline import trace_op
from autoperfect.native import NativeBuildError, build_key
from autoperfect.provenance import stage_hash
from autoperfect.spec import parse_ops

validate(config, schema="../schemas/config.schema.yaml")
OPS = parse_ops(config["ops"])
for _spec in OPS.values():
    trace_op(_spec)  # an unknown op or a failing function stops here, before anything is written
BACKENDS = backends.resolve(config["backends"])


def native_build_key():
    """The native extension's build key, so a change to its C++ sources reruns the native rule and
    the benchmarks after it (stage_hash follows Python modules only)."""
    try:
        return build_key()
    except NativeBuildError as err:
        return f"not buildable: {err}"


def spec_json(wildcards):
    """The one op's spec: editing it reruns that op only."""
    return json.dumps(OPS[wildcards.op].to_json(), sort_keys=True)


wildcard_constraints:
    op="|".join(OPS),
    backend="|".join(backends.KNOWN),
