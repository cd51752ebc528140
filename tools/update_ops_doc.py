#!/usr/bin/env python3
"""Rewrites the generated op table in docs/ops.md from `rml ops --markdown`.

usage: update_ops_doc.py RML_BINARY docs/ops.md
"""
import os
import subprocess
import sys
import tempfile

BEGIN = "<!-- BEGIN GENERATED OP TABLE -->\n"
END = "<!-- END GENERATED OP TABLE -->"


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    rml, doc_path = sys.argv[1:]
    table = subprocess.run([rml, "ops", "--markdown"], check=True, capture_output=True, text=True).stdout
    with open(doc_path, encoding="utf-8") as f:
        doc = f.read()
    start, stop = doc.find(BEGIN), doc.find(END)
    if start < 0 or stop < 0:
        print(f"{doc_path}: markers not found", file=sys.stderr)
        return 1
    updated = doc[: start + len(BEGIN)] + table + doc[stop:]
    # Write to a temporary file and rename, so a failure leaves the old doc.
    folder = os.path.dirname(os.path.abspath(doc_path))
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=folder, delete=False) as tmp:
        tmp.write(updated)
    os.chmod(tmp.name, os.stat(doc_path).st_mode & 0o777)  # keep the doc's permissions
    os.replace(tmp.name, doc_path)
    print(f"updated {doc_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
