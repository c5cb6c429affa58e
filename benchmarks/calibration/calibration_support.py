"""Shared by the validation scripts: the common command line and the calibration measurements."""
import argparse
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def arguments(doc):
    """Parses --fmsim, --measurements, --markdown and --json; returns (args, the measurements list)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--fmsim", default=os.path.join(ROOT, "build", "fmsim"))
    parser.add_argument("--measurements", default=os.path.join(ROOT, "..", "shared", "calibration", "measurements.json"))
    parser.add_argument("--markdown", help="write the table (for docs/validation.md)")
    parser.add_argument("--json", help="write the raw rows")
    args = parser.parse_args()
    with open(args.measurements) as f:
        return args, json.load(f)
