#!/usr/bin/env python3
"""Fails when an #include in core/ crosses a layer upward (or sideways).

core/layers.txt declares the layers, lowest first, and what each uses
directly ("graph: symbolic"). A file in core/<layer>/ may include headers
of its own layer and of every layer reachable through those edges; an
include of any other layer's header is a violation. Also violations: a
folder in core/ that layers.txt does not declare, and a core file that
includes a front end (cli/, wasm/, tests/, web/), which sit above the core,
and a wasm/ source that includes a core header outside api/: the bridge
only marshals, through the request layer (core/api/request.h).

Usage: check_layers.py [--root REPO]   (default: the repository holding
this script). Prints one line per violation, "file:line: message", and
exits 1 if there is any, 0 otherwise. CMakeLists.txt registers it as the
ctest "layers"; check_layers_test.py checks that it does fail.
"""
import argparse
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
FRONT_ENDS = ("cli", "wasm", "tests", "web")
SOURCE_SUFFIXES = (".h", ".hh", ".hpp", ".cc", ".cpp", ".cxx", ".inc")


def read_layers(path):
    """Returns (layers in declared order, {layer: [direct deps]})."""
    order, deps = [], {}
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            m = re.fullmatch(r"([a-z_]+):\s*([a-z_ ]*)", line)
            if not m:
                raise SystemExit(f"{path}:{lineno}: expected 'layer: dep dep ...', got {line!r}")
            name, used = m.group(1), m.group(2).split()
            for d in used:
                if d not in deps:
                    raise SystemExit(f"{path}:{lineno}: {name} uses {d}, which is not declared before it")
            if name in deps:
                raise SystemExit(f"{path}:{lineno}: {name} declared twice")
            order.append(name)
            deps[name] = used
    return order, deps


def reachable(deps):
    """{layer: set of layers it may include (itself and everything below)}."""
    out = {}
    for name in deps:  # declared order: dependencies are already resolved
        r = {name}
        for d in deps[name]:
            r |= out[d]
        out[name] = r
    return out


def check(root):
    core = os.path.join(root, "core")
    order, deps = read_layers(os.path.join(core, "layers.txt"))
    allowed = reachable(deps)
    violations = []
    for entry in sorted(os.listdir(core)):
        if os.path.isdir(os.path.join(core, entry)) and entry not in deps:
            violations.append(f"core/{entry}: not a layer; declare it in core/layers.txt")
    for layer in order:
        top = os.path.join(core, layer)
        if not os.path.isdir(top):
            continue
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames.sort()
            for fn in sorted(filenames):
                if not fn.endswith(SOURCE_SUFFIXES):
                    continue
                path = os.path.join(dirpath, fn)
                rel = os.path.relpath(path, root)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for lineno, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        target = m.group(2).strip()
                        first = target.split("/", 1)[0]
                        if "/" not in target:
                            continue  # <vector>, "chakra.pb.h" (generated into emit's include dir)
                        if first in FRONT_ENDS and m.group(1) == '"':
                            violations.append(f"{rel}:{lineno}: {layer} includes {target}: "
                                              f"the core never includes a front end ({first}/)")
                        elif first in deps and first not in allowed[layer]:
                            may = ", ".join(l for l in order if l in allowed[layer] and l != layer) or "nothing"
                            violations.append(f"{rel}:{lineno}: {layer} includes {target}, but {first} is not "
                                              f"below {layer} in core/layers.txt ({layer} may use: {may})")
    wasm = os.path.join(root, "wasm")
    for fn in sorted(os.listdir(wasm)) if os.path.isdir(wasm) else []:
        if not fn.endswith(SOURCE_SUFFIXES):
            continue
        with open(os.path.join(wasm, fn), encoding="utf-8", errors="replace") as f:
            for lineno, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if m and m.group(1) == '"' and "/" in m.group(2) and m.group(2).split("/", 1)[0] in deps \
                        and not m.group(2).startswith("api/"):
                    violations.append(f"wasm/{fn}:{lineno}: the bridge includes {m.group(2)}; it only marshals, "
                                      f"through core/api (request.h)")
    return violations


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    args = ap.parse_args()
    violations = check(args.root)
    for v in violations:
        print(v)
    if violations:
        print(f"check_layers: {len(violations)} include(s) cross a layer upward or sideways", file=sys.stderr)
        return 1
    print("check_layers: every include in core/ goes down the layers of core/layers.txt; wasm/ uses only api/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
