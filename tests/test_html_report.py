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


def _timing(s):
    return {"median_s": s, "ci95_s": [0.9 * s, 1.1 * s]}


def test_size_series_sorts_sizes_and_skips_what_it_cannot_plot(tmp_path):
    measured = {"bytes_moved": 32 << 20, "kernel": _timing(7e-4),
                "baselines": {"mlx_eager": _timing(4e-3), "numpy": _timing(9e-3)},
                "scaling": [{"divisor": 4, "bytes_moved": 8 << 20, "kernel": _timing(2e-4),
                             "mlx_eager": _timing(1e-3), "torch_compile": "not timed"},
                            {"divisor": 16, "skipped": "the kernel's output disagrees"},
                            {"divisor": 64, "bytes_moved": 512 << 10, "kernel": _timing(2e-5)}]}
    series = report.size_series(measured)
    assert set(series) == {"kernel", "mlx_eager"}  # numpy is not plotted; a broken timing is left out
    assert [n for n, _ in series["kernel"]] == [512 << 10, 8 << 20, 32 << 20]
    assert series["mlx_eager"][1][1]["median_s"] == 4e-3
    (tmp_path / "op" / "cpu").mkdir(parents=True)
    (tmp_path / "op" / "cpu" / "bench.json").write_text(json.dumps(measured))
    ceiling = {"bandwidth_gbps": 50.0}
    report.sizes_plot(str(tmp_path), ["op"], ["cpu"], ceiling, str(tmp_path / "sizes.png"))
    report.sizes_plot(str(tmp_path), ["missing"], ["cpu"], None, str(tmp_path / "empty.png"))  # a note
    assert (tmp_path / "sizes.png").read_bytes().startswith(b"\x89PNG")
    assert (tmp_path / "empty.png").read_bytes().startswith(b"\x89PNG")
