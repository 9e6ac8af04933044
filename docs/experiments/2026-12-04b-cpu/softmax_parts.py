"""Where softmax's arithmetic goes: its chosen rendering (results/softmax/cpu/candidates/
*.libmvec_scratch_v16.c, after `snakemake --cores 4 all`) with one part taken out each time, for
`docs/experiments/2026-12-04-cpu/hb.c` in cache (results wrong on purpose; only the time counts):
`noexp.c` (exp(x - max) replaced by x - max), `nomax.c` (no max pass: the max taken as 0),
`nonan.c` (the max pass without its NaN flag), `nostream.c` (plain stores instead of streaming).

    python docs/experiments/2026-12-04b-cpu/softmax_parts.py OUTDIR
    # then for each: gcc -O3 -march=native -fopenmp -ffp-contract=off -fno-math-errno -fno-trapping-math
    #   -fPIC -shared -o X.so OUTDIR/X.c -lmvec -lm; OMP_NUM_THREADS=1 ./hb ./X.so SYMBOL 1 1 0 64 1024
"""
import glob
import os
import shutil
import sys

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
(path,) = glob.glob("results/softmax/cpu/candidates/*.libmvec_scratch_v16.c")
src = open(path).read()
shutil.copy(path, os.path.join(out, "base.c"))
start, end = src.index("    float a1 = -INFINITY;"), src.index("    const float r1 = (n1 ? NAN : a1);")
variants = {
    "noexp": src.replace("const float v3 = expf(v2);", "const float v3 = v2;"),
    "nomax": src[:start] + "    float a1 = 0.0f; int n1 = 0;\n" + src[end:],
    "nonan": src.replace(" m1[l] |= (v0 != v0);", "").replace(" n1 |= (v0 != v0);", ""),
    "nostream": src.replace("const int ap_stream = R * N * 4 >= 16777216 && N <= 8192;", "const int ap_stream = 0;"),
}
for name, text in variants.items():
    assert text != src, name
    open(os.path.join(out, f"{name}.c"), "w").write(text)
print("wrote", sorted(os.listdir(out)), "symbol", src[src.index("void k_") + 5:src.index("(void **bufs")])
