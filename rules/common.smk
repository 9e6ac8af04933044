# Settings and op specs: checked once, before any job runs, with errors naming the op and field.
import json

from snakemake.utils import validate

from autoperfect import backends
from autoperfect.pipeline import trace_op
from autoperfect.provenance import stage_hash
from autoperfect.spec import parse_ops

validate(config, schema="../schemas/config.schema.yaml")
OPS = parse_ops(config["ops"])
for _spec in OPS.values():
    trace_op(_spec)  # an unknown op or a failing function stops here, before anything is written
BACKENDS = backends.resolve(config["backends"])


def spec_json(wildcards):
    """The one op's spec: editing it reruns that op only."""
    return json.dumps(OPS[wildcards.op].to_json(), sort_keys=True)


wildcard_constraints:
    op="|".join(OPS),
    backend="|".join(backends.KNOWN),
