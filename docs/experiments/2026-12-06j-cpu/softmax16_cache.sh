#!/bin/sh
# configs/mixed_precision.yaml's 16-bit softmaxes, their apmath_scratch_avx512 variant as this
# checkout renders it and as COMMIT's did (default HEAD), each on one thread with its rows in L2
# (row_driver.c), three times: ns a row and a hash of the outputs (the same bits: the same hash).
# Run: sh softmax16_cache.sh [COMMIT] (PYTHONPATH at a checkout).
here=$(cd "$(dirname "$0")" && pwd); out=$(mktemp -d); commit=${1:-HEAD}
python - "$here" "$out" "$commit" <<'PY'
import importlib.util, pathlib, sys, yaml
from autoperfect.backends import cpu
from autoperfect.pipeline import front
from autoperfect.spec import parse_op
here, out, commit = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3]
spec = importlib.util.spec_from_file_location("s", here.parent / "2026-12-06f-cpu/sources_same.py")
s = importlib.util.module_from_spec(spec); spec.loader.exec_module(s)
then = s.load(commit, "autoperfect/backends/cfamily.py", "cfamily_then")
from autoperfect.backends import cfamily
ops = yaml.safe_load((here.parents[2] / "configs/mixed_precision.yaml").read_text())["ops"]
for name in ("softmax_precise", "softmax_half"):
    (k,) = [k for k in front(parse_op(name, ops[name])).kernels if k is not None]
    (sch,) = [x for x in cpu.schedules_for(k) if x.name == "apmath_scratch_avx512"]
    for label, mod in (("now", cfamily), ("then", then)):
        (out / f"{name}.{label}.c").write_text(mod.CRenderer(k, sch).render())
    (out / f"{name}.kernel").write_text(k.name)
PY
cp "$here/../../../autoperfect/backends/vmath.c" "$here/../../../autoperfect/backends/vmath_avx512.h" "$out"
for name in softmax_precise softmax_half; do
  flag=; [ $name = softmax_precise ] && flag=-DBF16
  for label in then now; do
    gcc -O3 -march=native -fopenmp -ffp-contract=off -fno-math-errno -fno-trapping-math $flag \
      -DKERN=$(cat "$out/$name.kernel") -o "$out/$name.$label" "$here/row_driver.c" "$out/$name.$label.c" "$out/vmath.c" -lm
  done
done
for run in 1 2 3; do
  for name in softmax_precise softmax_half; do
    for label in then now; do echo "$name $label: $(OMP_NUM_THREADS=1 "$out/$name.$label" 128 400)"; done
  done
done
rm -rf "$out"
