#!/usr/bin/env python3
"""The include layering of warpscope's C and C++ code, checked.

Every quoted #include that names a folder of this repository ("model/...",
"agent/...") is an arrow from the including file's folder to that folder.
The arrows allowed are the RULES below: a folder may include itself and the
folders listed for it, and the most specific rule (longest prefix) decides.
Tests (*_test.cc, *_bpf_test.cc and the test-only files named in TEST_ONLY)
may also include tests/support and tests/fakes, and the TEST_EXCEPTIONS. Folders without a rule
(tests/, bench/, ui/) may include anything: they are the top of the tree.

Run from anywhere: scripts/check_layering.py [ROOT]. Exit status 1 lists
every wrong-way arrow as "file:line: folder -> included (allowed: ...)".
"""
import os
import re
import sys

# folder prefix -> folders it may include besides itself. Read from the
# bottom up: base and proto are the ground floor, model the shared
# vocabulary, then storage, query and server for the server side, the agent
# for the node, and cuda (the injection library) on its own.
RULES = {
    "base": [],
    "proto": [],
    "bpf": [],
    "model": ["base", "proto"],
    "storage": ["model", "base", "proto"],
    "query": ["storage", "model", "base", "proto"],
    "server": ["query", "storage", "model", "base", "proto"],
    # The injection library is loaded into applications: only the wire contract.
    "cuda": ["proto"],
    # The agent: its pipeline interfaces at the bottom, the sources and sinks
    # beside each other (never into one another), the commands on top.
    "agent": ["model", "base", "proto", "bpf"],
    "agent/pipeline": ["model", "base"],
    "agent/process": ["model", "base", "proto"],
    "agent/kubernetes": ["agent/process", "model", "base"],
    "agent/elf": ["base"],
    "agent/symbolize": ["agent/process", "agent/elf", "model", "base", "bpf"],
    "agent/unwind": ["agent/process", "agent/elf", "agent/symbolize", "model", "base", "bpf"],
    "agent/collectors/cpu": ["agent/collectors/per_cpu_counters.h", "agent/pipeline", "agent/process",
                             "agent/elf", "agent/symbolize", "agent/unwind", "model", "base", "bpf"],
    "agent/collectors/cpu_energy": ["agent/pipeline", "model", "base"],
    "agent/collectors/gpu_metrics": ["agent/pipeline", "agent/process", "model", "base"],
    "agent/collectors/gpu_time": ["agent/collectors/per_cpu_counters.h", "agent/pipeline", "agent/process",
                                  "agent/symbolize", "agent/unwind", "model", "base", "proto", "bpf"],
    "agent/export": ["agent/pipeline", "agent/process", "agent/kubernetes", "model", "base", "proto"],
    "agent/core": ["agent", "model", "base", "proto", "bpf"],
}
TEST_INCLUDES = ["tests/support", "tests/fakes"]
# Single arrows tests may take besides, each with its reason.
TEST_EXCEPTIONS = {
    # The agent's decoder is tested against the injection library's own encoder.
    "agent/collectors/gpu_time": ["cuda/wire_outbox.h"],
}
# Test-only sources whose names do not end in _test.cc.
TEST_ONLY = re.compile(r"(_test|_bpf_test|_test_util|_for_test)\.(cc|h)$")
SOURCE = re.compile(r"\.(c|cc|h)$")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SKIP_DIRS = {".git", "build", "node_modules"}


def rule_for(path):
    """The most specific rule for `path` (a file or folder), or None."""
    best = None
    for prefix in RULES:
        if path == prefix or path.startswith(prefix + "/"):
            if best is None or len(prefix) > len(best):
                best = prefix
    return best


def allowed(prefix, include, is_test):
    targets = [prefix] + RULES[prefix]
    if is_test:
        targets += TEST_INCLUDES + TEST_EXCEPTIONS.get(prefix, [])
    return any(include == t or include.startswith(t + "/") for t in targets)


def check(root):
    top_folders = {d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)) and d not in SKIP_DIRS}
    errors = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in sorted(filenames):
            if not SOURCE.search(name):
                continue
            path = os.path.relpath(os.path.join(dirpath, name), root)
            prefix = rule_for(path)
            if prefix is None:
                continue
            is_test = bool(TEST_ONLY.search(name))
            with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
                for lineno, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if not m or "/" not in m.group(1):
                        continue
                    include = m.group(1)
                    if include.split("/")[0] not in top_folders:
                        continue  # a library's header: "gtest/gtest.h"
                    if not allowed(prefix, include, is_test):
                        errors.append(f"{path}:{lineno}: {prefix} -> {include} "
                                      f"(allowed: {', '.join([prefix] + RULES[prefix])})")
    return errors


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    errors = check(os.path.abspath(root))
    for e in errors:
        print(e)
    if errors:
        print(f"check_layering: {len(errors)} include(s) run the wrong way (the rules are at the top of "
              f"scripts/check_layering.py)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
