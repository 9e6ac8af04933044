# The native-dispatch extension (one per machine and MLX version, cached under ~/.cache/autoperfect):
# built before any benchmark so kernels are timed as native MLX ops. Without a C++ toolchain the
# file says why, and kernels run through the ctypes path instead.
rule native:
    output:
        "results/native.json",
    params:
        code=stage_hash("autoperfect.native"),
        extension=native_build_key(),  # its C++ sources, MLX's and nanobind's versions, the ABI
    script:
        "../scripts/native.py"
