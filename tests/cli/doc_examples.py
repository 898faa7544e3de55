#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# Issue 35 §4: every halo-doctor command README.md and docs/*.md show (in fenced blocks, and as
# inline code spans) runs as shown on a machine without a GPU, unless the EXCLUDED table below says
# why not. A command "runs" when it exits with a code the docs define for a result (0, 1, 4:
# findings differ from machine to machine; a fixture's exit code is its golden test's business),
# never with a usage error (2), an internal error (70) or a signal. Where a fenced block shows the
# output under a command that does not depend on this machine (a fixture root, the rules), every
# line shown appears in the real output, in order ("..." stands for lines left out, a line ending
# in "..." is cut short). tests/cli/readme.sh checks the README's report and fix example.
# Issue 46: every sample output is checked, not only those under their command: a fenced block of
# output (no language, or text/console) in README.md, docs/*.md or the man page is compared with
# the real output of the command that makes it (SAMPLES below, for a block shown without its
# command), or listed in NOT_COMPARED with the reason; a new sample that is neither fails. The man
# page's EXAMPLES commands run as the Markdown ones do, its `fleet compare` marks are the ones the
# real output's legend names, and no document cites a reference/ file the repository lacks.
# Usage: doc_examples.py HALO_DOCTOR SOURCE_DIR BUILD_DIR
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

binary, src, build = (os.path.realpath(a) for a in sys.argv[1:4])

# Commands shown but not run here, by a regular expression on the command, and why.
EXCLUDED = [
    (r"^halo-doctor bench\b", "needs a GPU and halo-bench (tests/cli/bench_model.sh, cli.gpu_bench)"),
    (r"^halo-doctor slurm\b", "runs under slurmd with scontrol (tests/cli/slurm.sh)"),
    (r"--framework-deep", "imports torch for seconds (tests/cli/framework_deep.sh)"),
    (r"^halo-doctor facts --declared --format markdown -o docs/facts\.md",
     "rewrites docs/facts.md in the tree (test_fact_declarations compares it)"),
    (r"^halo-doctor(:| failed| \d)", "output shown in the docs, not a command"),
    (r"^halo-doctor (plan|fleet compare|capture|slurm|fix|check --framework-deep)$",
     "a subcommand named in prose (it needs the arguments the sentence describes)"),
    (r"bench\.json", "reads the bench.json `halo-doctor bench` writes on a GPU"),
    (r"(~/|/etc/halo-doctor/|/shared/|/host\b|/opt/conda|/var/lib/|\.venv/|\$b\b|\$\(hostname\))",
     "names a file of the reader's machine (a venv, a policy, a shared directory)"),
    (r"\b(DIR|FILE|RULE_ID|ARGS|ID|GIB)\b|<[a-z]+>|\[|\.\.\.|\\\||%N|\|\s*(prolog|epilog)",
     "a template with placeholders, not a command"),
    (r"--model tests/plan/models/llama-3-8b\s*\\?$", "continued on the next lines (run joined)"),
]

# Sample outputs shown without their command, by (file, the block's first line): the shell command
# (run in the scratch tree, halo-doctor on PATH) whose output holds every line shown, in order.
FLEET_NODES = "mi300x-ras-errors mi300x-degraded-link mi300x-nps4-16-kfd-nodes mi300x-numa-4021"
SAMPLES = {
    ("README.md", "halo-doctor 0.1.0 on strix-halo"):
        "halo-doctor check --root tests/fixtures/strix-halo-default-ttm --no-runtime",
    ("docs/fix.md", "# halo-doctor fix for strix-halo"):
        "halo-doctor fix --root tests/fixtures/strix-halo-default-ttm --stack grubby --no-runtime",
    ("docs/fleet.md", "! kernel"):
        f"for n in {FLEET_NODES}; do halo-doctor facts --root tests/fixtures/$n --no-runtime --format json "
        f"-o $n.json || exit 70; done; halo-doctor fleet compare $(for n in {FLEET_NODES}; do echo $n.json; done)",
    ("docs/framework.md", "python: torch 2.10.0+rocm7.13.0a20260318"):
        "halo-doctor check --root tests/fixtures/strix-halo-torch-therock-gfx1151 --no-runtime",
}

# Output-like blocks that are not compared with a real output, by (file, the block's first line
# prefix), and why.
NOT_COMPARED = {
    ("docs/architecture.md", "CLI (src/cli"): "a diagram of the code, not an output",
    ("docs/fix.md", "halo-doctor fix [--root DIR]"): "the command's synopsis, not an output",
    ("docs/fixtures.md", "exit\t1"):
        "an excerpt of a verdict table (tests/fixtures/*/verdicts.tsv), which cli.golden compares with the real run",
    ("docs/hsa.md", "halo-doctor facts | grep"): "two commands to run on a ROCm machine; no output shown",
    ("docs/policy.md", "halo-doctor: error: /etc/halo-doctor/policy.json:14"):
        "messages about a policy file of the reader's machine (tests/unit/test_policy.cpp checks them)",
    ("docs/slurm.md", "HealthCheckProgram="): "slurm.conf lines, not an output",
    ("docs/slurm.md", "$ sinfo -R"): "Slurm's sinfo on a cluster (tests/cli/slurm.sh runs the real slurmd)",
    ("docs/slurm.md", "srun --nodes=16"): "a command line for a Slurm cluster, no output shown",
}
OUTPUT_INFO = ("", "text", "console")


def doc_files():
    return ["README.md"] + sorted(os.path.relpath(p, src) for p in glob.glob(os.path.join(src, "docs", "*.md")))


def blocks():
    """(file, first line number, info string, lines) for each fenced block of the Markdown files."""
    out = []
    for path in doc_files():
        lines = open(os.path.join(src, path), encoding="utf-8").read().splitlines()
        start = None
        for i, line in enumerate(lines):
            if line.lstrip().startswith("```"):
                if start is None:
                    start, info, body = i, line.strip()[3:].strip(), []
                else:
                    out.append((path, start + 1, info, body))
                    start = None
            elif start is not None:
                body.append(line)
    return out


def man_commands():
    """The commands of the man page's .nf/.fi blocks (EXAMPLES), its escapes undone."""
    out = []
    path = "docs/halo-doctor.1"
    in_block = False
    for i, line in enumerate(open(os.path.join(src, path), encoding="utf-8").read().splitlines()):
        if line.startswith(".nf"):
            in_block = True
        elif line.startswith(".fi"):
            in_block = False
        elif in_block and line.startswith("halo-doctor "):
            out.append((path, i + 1, line.replace("\\-", "-"), [], None))
    return out


def commands():
    """(file, line, command, shown output lines, block) for each command in README.md, docs/*.md and
    the man page; block is (file, the block's first line number), None for an inline code span."""
    out = []
    for path in doc_files():
        lines = open(os.path.join(src, path), encoding="utf-8").read().splitlines()
        in_block = False
        prompted = False  # the block marks its commands with "$ ": every other line is output
        i = 0
        while i < len(lines):
            line = lines[i]
            if line.lstrip().startswith("```"):
                in_block = not in_block
                if in_block:
                    block = (path, i + 1)
                    j = i + 1
                    prompted = False
                    while j < len(lines) and not lines[j].lstrip().startswith("```"):
                        prompted = prompted or lines[j].lstrip().startswith("$ ")
                        j += 1
                i += 1
                continue
            if in_block:
                text = line.strip()
                if text.startswith("$ "):
                    text = text[2:]
                elif prompted:
                    i += 1
                    continue
                if re.match(r"halo-doctor\b", text):
                    start = i
                    while text.endswith("\\") and i + 1 < len(lines):
                        i += 1
                        text = text[:-1].rstrip() + " " + lines[i].strip()
                    text = re.sub(r"\s+#.*$", "", text)  # a trailing shell comment
                    shown = []
                    j = i + 1
                    while j < len(lines) and not lines[j].lstrip().startswith("```"):
                        if re.match(r"\s*\$ " if prompted else r"\s*(\$ )?halo-doctor ", lines[j]):
                            break
                        shown.append(lines[j])
                        j += 1
                    out.append((path, start + 1, text, shown, block))
            else:
                for m in re.finditer(r"`(halo-doctor [^`]+)`", line):
                    out.append((path, i + 1, m.group(1), [], None))
            i += 1
    return out + man_commands()


def compare(shown, real):
    """The first line of `shown` not found in `real` in order ("..." skips, a line ending in "..."
    is a prefix), or None when every line is there."""
    k = 0
    for want in shown:
        if want.strip() in ("...", ""):
            continue
        cut = want.rstrip().endswith("...")
        head = want.rstrip()[:-3].rstrip() if cut else want.rstrip()
        while k < len(real) and not (real[k].rstrip().startswith(head) if cut else real[k].rstrip() == head):
            k += 1
        if k == len(real):
            return want
        k += 1
    return None


def first_line(body):
    return next((l.strip() for l in body if l.strip()), "")


def man_fleet_marks(cwd, env):
    """The man page's `fleet compare` paragraph names the marks the real output's legend uses."""
    man = open(os.path.join(src, "docs/halo-doctor.1"), encoding="utf-8").read()
    para = man[man.index(".B fleet compare"):]
    para = para[:para.index(".TP", 3)]
    marks = set(re.findall(r"^\.B (\S)$", para, re.M))
    script = (f"for n in {FLEET_NODES}; do halo-doctor facts --root tests/fixtures/$n --no-runtime --format json "
              f"-o $n.json || exit 70; done; halo-doctor fleet compare *.json")
    run = subprocess.run(["/bin/bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True,
                         timeout=300)
    legend = next((l for l in run.stdout.splitlines() if re.match(r"\d+ nodes; ", l)), "")
    real = set(re.findall(r"(?:; |, )(\S) an? ", legend))
    if not real or marks != real:
        print(f"FAIL docs/halo-doctor.1: fleet compare's marks are {sorted(marks)}, the output's legend "
              f"({legend!r}) uses {sorted(real)}")
        return 1
    print(f"ok docs/halo-doctor.1: fleet compare's marks {sorted(marks)} are the output's")
    return 0


def reference_citations():
    """Every reference/NAME.md a document cites is in the repository."""
    bad = 0
    for path in doc_files() + ["docs/halo-doctor.1"]:
        text = open(os.path.join(src, path), encoding="utf-8").read()
        for m in re.finditer(r"(?<![\w/-])((?:\.\./)*(?:shared/)?reference/[\w.-]+)", text):
            if not os.path.exists(os.path.join(src, os.path.dirname(path), m.group(1))) and \
                    not os.path.exists(os.path.join(src, m.group(1))):
                print(f"FAIL {path}: cites {m.group(1)}, which is not in the repository")
                bad = 1
    return bad


def main():
    fail = 0
    ran = 0
    excluded = {}
    seen = set()
    work = tempfile.mkdtemp()
    try:
        tools = os.path.join(work, "bin")
        os.mkdir(tools)
        os.symlink(binary, os.path.join(tools, "halo-doctor"))
        # The documented paths are relative to the source tree; outputs land in the scratch copy.
        cwd = os.path.join(work, "tree")
        os.mkdir(cwd)
        for name in ("tests", "rules", "docs", "README.md", "packaging"):
            os.symlink(os.path.join(src, name), os.path.join(cwd, name))
        os.symlink(build, os.path.join(cwd, "build"))
        env = {"PATH": tools + ":/usr/sbin:/usr/bin:/sbin:/bin", "HOME": work, "LANG": "C.UTF-8",
               "NO_COLOR": "1"}
        compared = set()  # blocks whose shown output was compared with the real one (failures reported)
        for path, line, cmd, shown, block in commands():
            why = next((w for pat, w in EXCLUDED if re.search(pat, cmd)), None)
            if why:
                excluded.setdefault(why, []).append(f"{path}:{line}: {cmd}")
                continue
            if cmd in seen and not shown:
                continue
            seen.add(cmd)
            # A pipeline as shown: its exit code is halo-doctor's (the first command's), not that
            # of a `grep` finding nothing on this machine.
            script = cmd + "; exit ${PIPESTATUS[0]}"
            run = subprocess.run(["/bin/bash", "-c", script], cwd=cwd, env=env,
                                 capture_output=True, text=True, timeout=120)
            ran += 1
            allowed = {0, 1, 4}
            if run.returncode not in allowed:
                print(f"FAIL {path}:{line}: `{cmd}` exited {run.returncode} "
                      f"(allowed {sorted(allowed)}): {run.stderr.strip()[:300]}")
                fail = 1
                continue
            # Output that does not depend on this machine: a fixture root, saved facts or a
            # bundle of the tree, the rules, fleet compare of files in the tree.
            machine_free = re.search(r"--(root|facts|bundle) tests/", cmd) or re.match(
                r"halo-doctor (rules|explain|fleet compare tests/)", cmd)
            if shown and machine_free:
                missing = compare(shown, (run.stdout + run.stderr).splitlines())
                if missing is not None:
                    print(f"FAIL {path}:{line}: `{cmd}`: shown line not in the output in order: {missing}")
                    fail = 1
                if block:
                    compared.add(block)
            print(f"ok {path}:{line}: {cmd} (exit {run.returncode})")
        with_commands = {b for (_, _, _, _, b) in commands() if b}
        # Every sample output: compared above, made by its SAMPLES command, or not compared for
        # the reason NOT_COMPARED gives.
        samples_used, reasons_used = set(), set()
        for path, line, info, body in blocks():
            if info not in OUTPUT_INFO or (path, line) in compared:
                continue
            head = first_line(body)
            sample = next((k for k in SAMPLES if k[0] == path and head.startswith(k[1])), None)
            reason = next((k for k in NOT_COMPARED if k[0] == path and head.startswith(k[1])), None)
            if sample:
                samples_used.add(sample)
                run = subprocess.run(["/bin/bash", "-c", SAMPLES[sample]], cwd=cwd, env=env,
                                     capture_output=True, text=True, timeout=300)
                missing = compare(body, (run.stdout + run.stderr).splitlines())
                if run.returncode not in (0, 1, 4) or missing is not None:
                    print(f"FAIL {path}:{line}: the sample is not the output of `{SAMPLES[sample][:120]}` "
                          f"(exit {run.returncode}): first line not found in order: {missing}")
                    fail = 1
                else:
                    print(f"ok {path}:{line}: the sample ({len(body)} lines) is the real output")
            elif reason:
                reasons_used.add(reason)
                excluded.setdefault(NOT_COMPARED[reason], []).append(f"{path}:{line}: sample output")
            elif (path, line) in with_commands and not any(
                    shown for (_, _, _, shown, b) in commands() if b == (path, line)):
                continue  # commands only, each run above
            else:
                print(f"FAIL {path}:{line}: a sample output ({head[:60]!r}) is neither compared with the real "
                      "output nor listed in NOT_COMPARED with a reason (tests/cli/doc_examples.py)")
                fail = 1
        for key in set(SAMPLES) - samples_used:
            print(f"FAIL: SAMPLES names {key}, which no document shows any longer")
            fail = 1
        for key in set(NOT_COMPARED) - reasons_used:
            print(f"FAIL: NOT_COMPARED names {key}, which no document shows any longer")
            fail = 1
        fail |= man_fleet_marks(cwd, env)
        fail |= reference_citations()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for why, where in excluded.items():
        print(f"not run ({why}): {len(where)}")
        for w in where:
            print(f"  {w}")
    if ran < 15:
        print(f"FAIL: only {ran} documented commands ran")
        fail = 1
    print(f"{'FAIL' if fail else 'ok'}: {ran} documented commands ran as shown")
    return fail


if __name__ == "__main__":
    sys.exit(main())
