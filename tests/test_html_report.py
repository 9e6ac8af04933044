"""The report's HTML page and its time-against-size plot, from fixture artifacts."""

import base64
import json

from autoperfect import report

PNG = b"\x89PNG\r\n\x1a\n fixture"


def test_html_page_embeds_local_images_and_escapes_raw_html(tmp_path):
    (tmp_path / "plots").mkdir()
    (tmp_path / "plots" / "speedup.png").write_bytes(PNG)
    text = ("# Title\n\n| op | verdict |\n| --- | --- |\n| rms | FAILED: a \\| b <script>x</script> |\n\n"
            "![speedup](plots/speedup.png)\n\n![gone](plots/missing.png)\n")
    page = report.html_page(text, str(tmp_path))
    assert page.startswith("<!DOCTYPE html>") and "<h1>Title</h1>" in page
    assert "<td>FAILED: a | b &lt;script&gt;x&lt;/script&gt;</td>" in page
    assert f'src="data:image/png;base64,{base64.b64encode(PNG).decode()}"' in page
    assert 'src="plots/missing.png"' in page  # a missing file stays a link, never an error


def _record(rows, jit_s, eager_s):
    timing = lambda s: {"median_s": s, "ci95_s": [0.9 * s, 1.1 * s]}
    return {"shapes": {"x": [rows, 1024], "w": [1024]}, "warm": {"jit": timing(jit_s), "mlx_eager": timing(eager_s)}}


def test_size_series_sorts_each_ops_sizes_and_skips_broken_records(tmp_path):
    runtime = {"ops": {"rmsnorm": {"spec": _record(4096, 7e-4, 4e-3), "row": _record(1, 5e-5, 4e-5)},
                       "softmax": {"spec": {"shapes": {"x": [8, 8]}, "warm": "not timed"}}}}
    series = report.size_series(runtime)
    assert set(series) == {("rmsnorm", "jit"), ("rmsnorm", "mlx_eager")}
    assert [n for n, _ in series[("rmsnorm", "jit")]] == [2048, 4096 * 1024 + 1024]
    assert series[("rmsnorm", "mlx_eager")][1][1]["median_s"] == 4e-3
    (tmp_path / "runtime.json").write_text(json.dumps(runtime))
    report.sizes_plot(str(tmp_path), str(tmp_path / "sizes.png"))
    report.sizes_plot(str(tmp_path / "nothing"), str(tmp_path / "empty.png"))  # not measured: a note
    assert (tmp_path / "sizes.png").read_bytes().startswith(b"\x89PNG")
    assert (tmp_path / "empty.png").read_bytes().startswith(b"\x89PNG")
