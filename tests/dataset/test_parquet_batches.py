import pyarrow.parquet as pq

from harnessfit.dataset.exports import PARQUET_SCHEMAS, ParquetOut
from harnessfit.dataset.sink import DiskSink


def _rows(n: int, width: int) -> list[dict]:
    text = '{"role":"user","content":"%s"}'
    return [
        {
            "id": f"c{i:03d}",
            "messages": [text % ("m" * (width * (1 + i % 3)))],
            "tools": [],
            "meta": "{}",
            "source": "pi",
            "group": f"g{i % 4}",
        }
        for i in range(n)
    ]


def test_row_groups_close_on_size_and_keep_every_row(tmp_path):
    """Huge rows (one SFT row carries its whole context) close a row group early, so the buffer stays bounded; small
    rows still batch by count. Every row comes back in order, and the same rows give the same bytes."""
    rows = _rows(40, 1000)
    digests = []
    for run in ("a", "b"):
        sink = DiskSink(tmp_path / run)
        out = ParquetOut(sink.open("x.parquet"), PARQUET_SCHEMAS["conversations"], batch=16, max_chars=10_000)
        for r in rows:
            out.add(r)
        out.close()
        sink.finish()
        f = pq.ParquetFile(tmp_path / run / "x.parquet")
        sizes = [f.metadata.row_group(i).num_rows for i in range(f.metadata.num_row_groups)]
        assert sum(sizes) == 40 and max(sizes) < 16  # the size bound, not the count, closed the groups
        assert f.read().to_pylist() == rows
        digests.append((tmp_path / run / "x.parquet").read_bytes())
    assert digests[0] == digests[1]

    sink = DiskSink(tmp_path / "small")
    out = ParquetOut(sink.open("x.parquet"), PARQUET_SCHEMAS["conversations"], batch=16, max_chars=10_000)
    for r in _rows(40, 1):
        out.add(r)
    out.close()
    sink.finish()
    f = pq.ParquetFile(tmp_path / "small" / "x.parquet")
    assert [f.metadata.row_group(i).num_rows for i in range(f.metadata.num_row_groups)] == [16, 16, 8]
