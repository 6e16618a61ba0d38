#!/usr/bin/env python3
"""Checks that check_layers.py can fail: it runs the checker on temporary
copies of core/ with one deliberately bad include (upward, sideways, into a
front end) or an undeclared folder, and expects exit 1 naming the file and
line; and on copies with harmless changes (a downward include, a declared
layer without a folder), expecting exit 0. Registered as the ctest
"layers_selftest"."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CHECKER = os.path.join(HERE, "check_layers.py")


def run(root):
    p = subprocess.run([sys.executable, CHECKER, "--root", root], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


class CheckLayers(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="check_layers_")
        shutil.copytree(os.path.join(ROOT, "core"), os.path.join(self.tmp, "core"))
        shutil.copytree(os.path.join(ROOT, "wasm"), os.path.join(self.tmp, "wasm"))

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def add_line(self, rel, line):
        path = os.path.join(self.tmp, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")
        with open(path, encoding="utf-8") as f:
            return sum(1 for _ in f)  # line number of the added line

    def test_tree_passes(self):
        rc, out = run(ROOT)
        self.assertEqual(rc, 0, out)

    def test_upward_include_fails(self):
        # The include this refactor removed: graph reaching into trace.
        n = self.add_line("core/graph/graph.h", '#include "trace/rank_trace.h"')
        rc, out = run(self.tmp)
        self.assertEqual(rc, 1, out)
        self.assertIn(f"core/graph/graph.h:{n}: graph includes trace/rank_trace.h", out)

    def test_upward_include_from_a_source_file_fails(self):
        n = self.add_line("core/base/status.cc", '#include "api/api.h"')
        rc, out = run(self.tmp)
        self.assertEqual(rc, 1, out)
        self.assertIn(f"core/base/status.cc:{n}: base includes api/api.h", out)

    def test_angle_bracket_include_is_checked_too(self):
        self.add_line("core/parallel/mesh.h", "#include <job/job.h>")
        rc, out = run(self.tmp)
        self.assertEqual(rc, 1, out)
        self.assertIn("parallel includes job/job.h", out)

    def test_sideways_include_fails(self):
        # model and parallel are siblings above graph: neither may use the other.
        self.add_line("core/model/transformer.h", '#include "parallel/mesh.h"')
        rc, out = run(self.tmp)
        self.assertEqual(rc, 1, out)
        self.assertIn("model includes parallel/mesh.h", out)

    def test_front_end_include_fails(self):
        self.add_line("core/api/api.cc", '#include "cli/args.h"')
        rc, out = run(self.tmp)
        self.assertEqual(rc, 1, out)
        self.assertIn("the core never includes a front end", out)

    def test_bridge_reaching_past_the_request_layer_fails(self):
        n = self.add_line("wasm/bridge.cc", '#include "job/job.h"')
        rc, out = run(self.tmp)
        self.assertEqual(rc, 1, out)
        self.assertIn(f"wasm/bridge.cc:{n}: the bridge includes job/job.h", out)

    def test_undeclared_folder_fails(self):
        self.add_line("core/util/util.h", "#pragma once")
        rc, out = run(self.tmp)
        self.assertEqual(rc, 1, out)
        self.assertIn("core/util: not a layer", out)

    def test_downward_and_transitive_includes_pass(self):
        self.add_line("core/api/api.cc", '#include "symbolic/expr.h"')  # several layers down
        self.add_line("core/trace/lower.cc", '#include "model/transformer.h"')  # via job
        rc, out = run(self.tmp)
        self.assertEqual(rc, 0, out)

    def test_declared_layer_without_folder_passes(self):
        # cost and sim may not exist yet on every branch; a new layer folder
        # uses what it declares.
        shutil.rmtree(os.path.join(self.tmp, "core", "cost"), ignore_errors=True)
        shutil.rmtree(os.path.join(self.tmp, "core", "sim"), ignore_errors=True)
        rc, out = run(self.tmp)
        self.assertEqual(rc, 0, out)
        self.add_line("core/sim/sim.h", '#include "trace/rank_trace.h"')
        rc, out = run(self.tmp)
        self.assertEqual(rc, 0, out)
        self.add_line("core/cost/cost.h", '#include "trace/rank_trace.h"')  # cost is below trace
        rc, out = run(self.tmp)
        self.assertEqual(rc, 1, out)
        self.assertIn("cost includes trace/rank_trace.h", out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
