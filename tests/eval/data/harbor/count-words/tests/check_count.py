import json
from pathlib import Path

got = Path("/app/count.txt").read_text().strip() if Path("/app/count.txt").is_file() else ""
want = str(len(Path("/app/words.txt").read_text().split()))
print("ok" if got == want else f"FAIL /app/count.txt: {got!r} != {want!r}")
Path("/logs/verifier/reward.json").write_text(json.dumps({"reward": 1.0 if got == want else 0.0}))
