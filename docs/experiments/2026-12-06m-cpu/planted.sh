#!/usr/bin/env bash
# Planted bugs in this session's code, one at a time, each against the tests that should catch it;
# prints "caught" where some test fails. Run from the root of a clean checkout (it edits the source
# and restores it with git checkout): bash docs/experiments/2026-12-06m-cpu/planted.sh
set -u
plant() {  # file, sed expression, pytest -k expression, test file
  cp "$1" /tmp/planted.bak
  sed -i "$2" "$1"
  if cmp -s "$1" /tmp/planted.bak; then echo "NOT APPLIED: $2"; return; fi
  if python -m pytest -o addopts="" -q -x "$4" -k "$3" > /tmp/planted.log 2>&1; then
    echo "missed: $1: $2"
  else
    echo "caught: $1: $2 ($(tail -1 /tmp/planted.log))"
  fi
  git checkout -q -- "$1"
}
CF=autoperfect/backends/cfamily.py; AD=autoperfect/autodiff.py
COLS="shifted_column or shifted_sums_cannot"; T=tests/test_cpu_schedules.py; A=tests/test_autodiff.py
plant $CF 's/f"ap_ok\[l\] = N >= {shifted_columns_from(SHIFT_BLOCK)} \&\& {TRUSTED_SPREAD};"/"ap_ok[l] = 1;"/' "$COLS" $T
plant $CF 's/f"ap_ok\[l\] = N >= {shifted_columns_from(SHIFT_BLOCK)} \&\& /f"ap_ok[l] = /' "$COLS" $T
plant $CF 's/ap_redo |= !ap_ok\[l\];/ap_redo |= 0;/' "$COLS" $T
plant $CF 's/"ap_c1\[l\] += ap_b1\[l\]; ap_c2\[l\] += ap_b2\[l\];"/"ap_c1[l] += ap_b1[l]; ap_c2[l] += 0.5f * ap_b2[l];"/' "$COLS" $T
GRAPH="not grad_of and not cannot_write and not fused_vjp_off and not python_arguments and not training_step"
plant $AD 's/first = e.emit(Op.GT if op is Op.MAX else Op.LT/first = e.emit(Op.GE if op is Op.MAX else Op.LT/' "$GRAPH" $A
plant $AD 's/if scale != 1:/if False:/' "$GRAPH" $A
plant $AD 's/e.emit(Op.SUB, \[e.k(1.0), e.mul(y, y)\])/e.emit(Op.ADD, [e.k(1.0), e.mul(y, y)])/' "$GRAPH" $A
plant $AD 's/count = e.reduce(Op.SUM, e.cast(hit, n.dtype), n.attr("axes"), True)/count = e.k(1.0)/' "$GRAPH" $A
plant $AD 's/return \[(s\[0\], g), (s\[1\], e.emit(Op.NEG, \[g\]))\]/return [(s[0], g), (s[1], g)]/' "$GRAPH" $A
plant autoperfect/runtime.py 's/self.parent_fn, self.constants, self.inputs = parent.fn, constants, inputs/self.parent_fn, self.constants, self.inputs = parent.fn, {}, inputs/' "python_arguments" $A
plant autoperfect/trace.py 's/        elif isinstance(value, types.FunctionType) and value.__globals__ is module:/        elif False:/' "module_helper" $A
