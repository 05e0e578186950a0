from pathlib import Path


def test_sorted():
    names = Path("/app/names.txt").read_text().split()
    assert Path("/app/sorted.txt").read_text().split() == sorted(names)
