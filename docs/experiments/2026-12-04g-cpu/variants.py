"""hand.c's three variants as sources the harnesses build (the candidates' ABI), into DIR:
hand_inline.c (our exp inlined), hand_call.c (vmath.c's vector entry point called) and pipelined.c
(exp inlined, each row's final pass in the next row's exp pass). Run from the repository root:
`python docs/experiments/2026-12-04g-cpu/variants.py DIR`; the exp is the project's own
(cfamily.own_vector16, the text of backends/vmath_avx512.h)."""
import sys
from pathlib import Path

from autoperfect.backends.cfamily import own_vector16

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
hand = Path(__file__).with_name("hand.c").read_text()
head = "#include <stdint.h>\n#include <math.h>\n#include <omp.h>\n#include <immintrin.h>\n" + own_vector16() + "\n"
calls = "float ap_expf(float);\n__m512 _ZGVeN16v_ap_expf(__m512);\n#define AP_EXP16 _ZGVeN16v_ap_expf\n"
variants = {
    "hand_inline.c": "#define AP_EXP16 ap_expf_v16\n",
    # the scalar function named too, so that cpu.build links vmath.c's object in
    "hand_call.c": calls + "float ap_link(float x) { return ap_expf(x); }\n",
    "pipelined.c": "#define AP_EXP16 ap_expf_v16\n#define AP_PIPELINED\n",
}
for name, defines in variants.items():
    (out / name).write_text(head + defines + hand)
    print(out / name)
