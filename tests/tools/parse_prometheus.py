#!/usr/bin/python3
"""Parses Prometheus text exposition format from stdin with the Prometheus
Python client's own parser and prints it as JSON, so C++ tests check what a
Prometheus server would read rather than matching strings:

  {"families": [{"name": ..., "type": ..., "help": ...,
                 "samples": [{"name": ..., "labels": {...}, "value": ...}]}]}

A syntax error exits with status 1 and the parser's message on stderr."""
import json
import math
import sys

from prometheus_client.parser import text_string_to_metric_families


def main():
    text = sys.stdin.read()
    families = []
    try:
        for family in text_string_to_metric_families(text):
            samples = []
            for s in family.samples:
                value = s.value
                samples.append({"name": s.name, "labels": dict(s.labels),
                                "value": None if math.isnan(value) else value})
            families.append({"name": family.name, "type": family.type,
                             "help": family.documentation, "samples": samples})
    except Exception as e:  # the parser raises ValueError and others on bad input
        print(f"parse error: {e}", file=sys.stderr)
        return 1
    json.dump({"families": families}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
