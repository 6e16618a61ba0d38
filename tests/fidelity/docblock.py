"""What the fidelity tables share: run the CLI on each row's job, and keep
a generated block of a doc in step with it.

A block lies between `<!-- fidelity:NAME:begin -->` and
`<!-- fidelity:NAME:end -->` (NAME = the spec file's stem). With update the
block is rewritten; without it a block that differs from the regenerated
one is drift: both are printed and the process exits 1.
"""
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor


def args(usage):
    """`CLI SPEC.json DOC.md [--update]` from the command line (USAGE when
    short): (cli, spec_path, the parsed spec, doc_path, update, NAME = the
    spec file's stem)."""
    if len(sys.argv) < 4:
        raise SystemExit(usage)
    cli, spec_path, doc_path = sys.argv[1:4]
    with open(spec_path) as f:
        spec = json.load(f)
    name = os.path.splitext(os.path.basename(spec_path))[0]
    return cli, spec_path, spec, doc_path, "--update" in sys.argv[4:], name


def run_cli(cli, command, job, workdir, name):
    """`CLI COMMAND --config JOB --json`, parsed; exits naming the row on failure."""
    path = os.path.join(workdir, name + ".json")
    with open(path, "w") as f:
        json.dump(job, f)
    try:
        out = subprocess.run([cli, command, "--config", path, "--json"], capture_output=True, text=True)
    finally:
        os.remove(path)
    if out.returncode != 0:
        raise SystemExit(f"{name}: {command} failed: {out.stderr}")
    return json.loads(out.stdout)


def run_all(cli, command, jobs, name):
    """Every job through `run_cli`, JOBS at a time (default 2), in order."""
    workdir = os.environ.get("TMPDIR", "/tmp")
    with ThreadPoolExecutor(max_workers=int(os.environ.get("JOBS", "2"))) as pool:
        return list(pool.map(lambda ij: run_cli(cli, command, ij[1], workdir, f"{name}-{os.getpid()}-{ij[0]}"),
                             enumerate(jobs)))


def sync(doc_path, name, table, update, command, regenerate, rows):
    """Writes TABLE into DOC's block NAME (update) or checks it is there."""
    begin, end = f"<!-- fidelity:{name}:begin -->\n", f"<!-- fidelity:{name}:end -->"
    doc = open(doc_path).read()
    if begin not in doc or end not in doc:
        raise SystemExit(f"{doc_path}: markers for {name} not found")
    head, rest = doc.split(begin, 1)
    old, tail = rest.split(end, 1)
    if update:
        open(doc_path, "w").write(head + begin + table + end + tail)
        print(table, end="")
        return
    if old != table:
        print(f"{doc_path}: the {name} table drifted from what {command} gives now.\n--- doc\n{old}--- {command}\n"
              f"{table}(regenerate: {regenerate} --update)")
        sys.exit(1)
    print(f"{name}: {rows} rows match the doc")
