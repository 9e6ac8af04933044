from autoperfect import artifacts, native

try:
    native.build()
except native.NativeBuildError as err:
    print(f"native dispatch unavailable: {err}")
artifacts.write_json(snakemake.output[0], native.describe())
