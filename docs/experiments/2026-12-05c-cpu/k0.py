"""LayerNorm's `_vecfma` rendering (render.py, before 7885d51) with K forced to 0 and the shifted
sum dropped (sum(d) is then the mean's own sum): what two sums cost with no sample and no branch,
`python docs/experiments/2026-12-05c-cpu/k0.py IN.c OUT.c`. A timing sketch, not kept."""
import sys

src = open(sys.argv[1]).read()
sample_end = "    if (ap_jk > 0) ap_k = ap_k / (float)ap_jk;\n"
src = src.replace(sample_end, sample_end + "    ap_k = 0.0f;\n", 1)
for h in "01":
    src = src.replace(f"ap_s1pv{h} = ap_s1pv{h} + ap_d;", "")
src = src.replace("const __m512 ap_d = v0 - ap_k;", "const __m512 ap_d = v0;")
src = src.replace("    const float r1 = a1;\n", "    ap_s1 = a1;\n    const float r1 = a1;\n", 1)
open(sys.argv[2], "w").write(src)
