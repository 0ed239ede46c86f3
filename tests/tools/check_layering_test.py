#!/usr/bin/env python3
"""scripts/check_layering.py on small trees with known answers: each arrow that
once ran the wrong way in this repository fails the check, the allowed ones
pass, and the repository itself passes."""
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
CHECKER = os.path.join(ROOT, "scripts", "check_layering.py")


def run_checker(root):
    p = subprocess.run([sys.executable, CHECKER, root], capture_output=True, text=True)
    return p.returncode, p.stdout


class CheckLayeringTest(unittest.TestCase):
    def tree(self, files):
        """A scratch repository with `files` ({path: text}); folders every tree has exist."""
        d = tempfile.mkdtemp(prefix="ws-layering-")
        self.addCleanup(subprocess.run, ["rm", "-rf", d])
        for folder in ["base", "proto", "model", "storage", "query", "server", "agent", "cuda", "bpf", "tests"]:
            os.makedirs(os.path.join(d, folder), exist_ok=True)
        for path, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(d, path)), exist_ok=True)
            with open(os.path.join(d, path), "w") as f:
                f.write(text)
        return d

    def assertWrongWay(self, path, include):
        code, out = run_checker(self.tree({path: f'#include "{include}"\n'}))
        self.assertEqual(code, 1, out)
        self.assertIn(f"{path}:1:", out)
        self.assertIn(f"-> {include}", out)

    def assertAllowed(self, path, include):
        code, out = run_checker(self.tree({path: f'#include "{include}"\n'}))
        self.assertEqual(code, 0, out)

    def test_the_storage_query_cycle_fails(self):
        self.assertWrongWay("storage/profile_store.h", "query/selector.h")
        self.assertWrongWay("storage/embedded/series_catalog.h", "query/selector.h")

    def test_the_old_uphill_arrows_fail(self):
        self.assertWrongWay("query/profile_export.cc", "agent/export/pprof_writer.h")
        self.assertWrongWay("agent/core/run.cc", "server/http_server.h")
        self.assertWrongWay("agent/export/window_batches.h", "server/http_server.h")
        self.assertWrongWay("cuda/tools/ws_cuda_listen.cc", "agent/collectors/gpu_time/socket/cuda_socket_server.h")
        self.assertWrongWay("model/profile.h", "agent/pipeline/window.h")
        self.assertWrongWay("base/http/http_server.h", "server/api_params.h")

    def test_collectors_and_sinks_stay_out_of_each_other(self):
        self.assertWrongWay("agent/collectors/gpu_time/gpu_time_collector.cc", "agent/collectors/cpu/cpu_collector.h")
        self.assertWrongWay("agent/collectors/cpu/cpu_collector.cc", "agent/export/upload_sink.h")
        self.assertWrongWay("agent/export/upload_sink.cc", "agent/collectors/cpu/cpu_collector.h")
        self.assertWrongWay("agent/pipeline/agent_loop.cc", "agent/core/lifecycle.h")

    def test_production_code_never_includes_test_helpers(self):
        self.assertWrongWay("agent/export/uploader.cc", "tests/fakes/fake_ingest_server.h")
        self.assertAllowed("agent/export/uploader_test.cc", "tests/fakes/fake_ingest_server.h")

    def test_downhill_arrows_pass(self):
        self.assertAllowed("query/flame_graph.h", "storage/profile_store.h")
        self.assertAllowed("server/api_handlers.cc", "query/flame_graph.h")
        self.assertAllowed("storage/profile_store.h", "model/selector.h")
        self.assertAllowed("agent/core/run.cc", "agent/export/upload_sink.h")
        self.assertAllowed("agent/collectors/cpu/cpu_collector.h", "agent/pipeline/collector.h")
        self.assertAllowed("cuda/wire_outbox.h", "proto/cuda/cuda_wire.h")
        self.assertAllowed("tests/integration/run_bpf_test.cc", "agent/core/run.h")

    def test_library_headers_and_generated_files_are_not_arrows(self):
        self.assertAllowed("base/status.cc", "gtest/gtest.h")
        self.assertAllowed("agent/collectors/cpu/cpu_sampler.cc", "cpu_sampler.skel.h")

    def test_every_wrong_arrow_is_listed(self):
        code, out = run_checker(self.tree({
            "storage/a.h": '#include "query/selector.h"\n#include "model/selector.h"\n#include "server/x.h"\n',
        }))
        self.assertEqual(code, 1)
        self.assertEqual(len(out.strip().splitlines()), 2, out)
        self.assertIn("storage/a.h:1:", out)
        self.assertIn("storage/a.h:3:", out)

    def test_this_repository_passes(self):
        code, out = run_checker(ROOT)
        self.assertEqual(code, 0, out)


if __name__ == "__main__":
    unittest.main()
