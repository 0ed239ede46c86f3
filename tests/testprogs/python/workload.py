"""Python workloads with known answers for the CPython unwinder tests.

    python3 workload.py split SECONDS     Pipeline.hot gets 3/4 of the CPU, Pipeline.cold 1/4
    python3 workload.py threads SECONDS   three pool threads, each spinning in its own function
    python3 workload.py zlib SECONDS      zlib.compress in a loop: Python -> C extension -> libz
    python3 workload.py deep SECONDS      30 Python frames (26 distinct functions) spinning at the bottom

Lines the tests check carry a "# LINE:<name>" marker; the test reads this file
to learn their numbers. The script prints "ready" once it starts working.
"""
import concurrent.futures
import os
import sys
import threading
import time
import zlib

QUANTUM = 0.02


class Pipeline:
    def hot(self, seconds):
        end = time.perf_counter() + seconds
        x = 0
        while time.perf_counter() < end:  # LINE:hot_loop
            x += 1  # LINE:hot_body
        return x

    def cold(self, seconds):
        end = time.perf_counter() + seconds
        x = 0
        while time.perf_counter() < end:  # LINE:cold_loop
            x += 1  # LINE:cold_body
        return x

    def middle(self, quantum):
        return self.hot(3 * quantum)  # LINE:middle_calls_hot


def outer(pipeline, quantum):
    pipeline.middle(quantum)  # LINE:outer_calls_middle
    pipeline.cold(quantum)  # LINE:outer_calls_cold


def run_split(seconds):
    pipeline = Pipeline()
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        outer(pipeline, QUANTUM)  # LINE:run_split_calls_outer


def spin_until(end):
    x = 0
    while time.perf_counter() < end:
        x += 1
    return x


def task_alpha(end):
    return spin_until(end)  # LINE:task_alpha


def task_beta(end):
    return spin_until(end)  # LINE:task_beta


def task_gamma(end):
    return spin_until(end)  # LINE:task_gamma


def run_threads(seconds):
    end = time.perf_counter() + seconds
    with concurrent.futures.ThreadPoolExecutor(max_workers=3, thread_name_prefix="pool") as pool:
        futures = [pool.submit(task, end) for task in (task_alpha, task_beta, task_gamma)]
        for f in futures:
            f.result()


def compress_loop(end):
    data = os.urandom(1 << 16) + bytes(1 << 16)
    n = 0
    while time.perf_counter() < end:
        n += len(zlib.compress(data, 9))  # LINE:compress_call
    return n


def run_zlib(seconds):
    compress_loop(time.perf_counter() + seconds)


# 30 Python frames in all: <module>, main, run_deep, d01 ... d26, spin_until; 26 distinct functions
# (not one recursive one) so that every frame has its own code object, as in real stacks.
def d01(end):
    return d02(end)


def d02(end):
    return d03(end)


def d03(end):
    return d04(end)


def d04(end):
    return d05(end)


def d05(end):
    return d06(end)


def d06(end):
    return d07(end)


def d07(end):
    return d08(end)


def d08(end):
    return d09(end)


def d09(end):
    return d10(end)


def d10(end):
    return d11(end)


def d11(end):
    return d12(end)


def d12(end):
    return d13(end)


def d13(end):
    return d14(end)


def d14(end):
    return d15(end)


def d15(end):
    return d16(end)


def d16(end):
    return d17(end)


def d17(end):
    return d18(end)


def d18(end):
    return d19(end)


def d19(end):
    return d20(end)


def d20(end):
    return d21(end)


def d21(end):
    return d22(end)


def d22(end):
    return d23(end)


def d23(end):
    return d24(end)


def d24(end):
    return d25(end)


def d25(end):
    return d26(end)


def d26(end):
    return spin_until(end)  # LINE:deep_bottom


def run_deep(seconds):
    d01(time.perf_counter() + seconds)


def main():
    mode, seconds = sys.argv[1], float(sys.argv[2])
    print("ready", flush=True)
    {"split": run_split, "threads": run_threads, "zlib": run_zlib, "deep": run_deep}[mode](seconds)  # LINE:main


if __name__ == "__main__":
    main()  # LINE:module
