#!/usr/bin/env python3
"""Writes a large x86-64 executable for the agent's memory benchmarks.

    gen_big_binary.py N OUT [--seed S] [--build-id-seed S]

The executable has N functions, each with full CFI (a frame-pointer prologue,
a short spin loop, the epilogue) and a ~100-character C++-mangled global name,
a .data.rel.ro table of pointers to all of them, and a C main that calls
table[xorshift % N] forever. Its .text, .eh_frame, .eh_frame_hdr, .symtab and
.strtab all grow linearly with N: 1,000,000 functions make a 211 MB binary
(.eh_frame 32 MB, .symtab 24 MB, .strtab 99 MB), which gcc assembles and
links in ~40 s on 2 cores with ~6 GB of memory. --seed sets the xorshift
state that main starts from; --build-id-seed adds a symbol named after it, so
two binaries of the same N differ in build id. Prints OUT and its section
sizes (readelf -SW) when done.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

# A valid Itanium mangling: void warpscope::bench::generated_codeNNNNNNN::
# a_long_function_template<warpscope::detail::payload>(payload const&,
# unsigned long, void*).
NAME = "_ZN9warpscope5bench21generated_code%07d24a_long_function_templateINS_6detail7payloadEEEvRKT_mPv"

# One macro per function keeps the assembly file small (N lines of "F name"
# instead of ~15 per function).
PROLOGUE = """\
\t.section .note.GNU-stack,"",@progbits
\t.macro F name
\t.globl \\name
\t.type \\name, @function
\t.p2align 4
\\name:
\t.cfi_startproc
\tpush %rbp
\t.cfi_def_cfa_offset 16
\t.cfi_offset %rbp, -16
\tmov %rsp, %rbp
\t.cfi_def_cfa_register %rbp
\tmov $300, %ecx
1:\tdec %ecx
\tjnz 1b
\tpop %rbp
\t.cfi_def_cfa %rsp, 8
\tret
\t.cfi_endproc
\t.size \\name, .-\\name
\t.endm
\t.text
"""

MAIN_C = """\
#include <stdint.h>
typedef void (*fn)(void);
extern const fn warpscope_bench_table[];
int main(void) {
  uint64_t x = %dull;
  for (;;) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    warpscope_bench_table[x %% %dull]();
  }
}
"""


def write_assembly(path, n, build_id_seed):
    chunk = 100_000
    with open(path, "w") as f:
        f.write(PROLOGUE)
        for lo in range(0, n, chunk):
            f.write("".join("F " + NAME % i + "\n" for i in range(lo, min(n, lo + chunk))))
        f.write('\t.section .data.rel.ro,"aw"\n\t.globl warpscope_bench_table\n\t.p2align 3\n')
        f.write("warpscope_bench_table:\n")
        for lo in range(0, n, chunk):
            f.write("".join("\t.quad " + NAME % i + "\n" for i in range(lo, min(n, lo + chunk))))
        if build_id_seed is not None:
            f.write("\t.section .rodata\n\t.globl warpscope_bench_variant_%s\n" % build_id_seed)
            f.write("warpscope_bench_variant_%s:\n\t.byte 0\n" % build_id_seed)


def symbol_suffix(s):
    if not re.fullmatch(r"[A-Za-z0-9_]+", s):
        raise argparse.ArgumentTypeError("letters, digits and _ only: %r" % s)
    return s


def print_sections(out):
    sections = subprocess.run(["readelf", "-SW", out], capture_output=True, text=True, check=True).stdout
    print("%s: %.1f MB" % (out, os.path.getsize(out) / 1e6))
    # "  [Nr] Name Type Address Off Size ...": the name, then the size in hex.
    for m in re.finditer(r"^\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+[0-9a-f]+\s+[0-9a-f]+\s+([0-9a-f]+)", sections, re.M):
        print("  %-20s %14s bytes" % (m.group(1), format(int(m.group(2), 16), ",")))


def main():
    p = argparse.ArgumentParser(description="Writes an x86-64 executable with N functions.")
    p.add_argument("n", type=int, help="number of functions")
    p.add_argument("out", help="the executable to write")
    p.add_argument("--seed", type=int, default=88172645463325252, help="main's first xorshift state")
    p.add_argument("--build-id-seed", type=symbol_suffix,
                   help="letters, digits and _; binaries with different ones differ in build id")
    args = p.parse_args()
    if args.n < 1 or args.seed == 0:
        sys.exit("N must be at least 1 and the seed other than 0")
    with tempfile.TemporaryDirectory(prefix="gen_big_binary.") as tmp:
        t0 = time.monotonic()
        write_assembly(os.path.join(tmp, "funcs.s"), args.n, args.build_id_seed)
        with open(os.path.join(tmp, "main.c"), "w") as f:
            f.write(MAIN_C % (args.seed % 2**64, args.n))
        t1 = time.monotonic()
        subprocess.run(["gcc", "-O1", "-Wl,-z,noexecstack", "-o", os.path.abspath(args.out),
                        "main.c", "funcs.s"], cwd=tmp, check=True)
        t2 = time.monotonic()
    print("generated in %.1f s, assembled and linked in %.1f s" % (t1 - t0, t2 - t1))
    print_sections(args.out)


if __name__ == "__main__":
    main()
