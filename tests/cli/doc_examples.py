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


def commands():
    """(file, line, command, shown output lines) for each command in README.md and docs/*.md."""
    out = []
    for path in ["README.md"] + sorted(os.path.relpath(p, src) for p in glob.glob(os.path.join(src, "docs", "*.md"))):
        lines = open(os.path.join(src, path), encoding="utf-8").read().splitlines()
        in_block = False
        i = 0
        while i < len(lines):
            line = lines[i]
            if line.lstrip().startswith("```"):
                in_block = not in_block
                i += 1
                continue
            if in_block:
                text = line.strip()
                if text.startswith("$ "):
                    text = text[2:]
                if re.match(r"halo-doctor\b", text):
                    start = i
                    while text.endswith("\\") and i + 1 < len(lines):
                        i += 1
                        text = text[:-1].rstrip() + " " + lines[i].strip()
                    text = re.sub(r"\s+#.*$", "", text)  # a trailing shell comment
                    shown = []
                    j = i + 1
                    while j < len(lines) and not lines[j].lstrip().startswith("```"):
                        if re.match(r"\s*(\$ )?halo-doctor ", lines[j]):
                            break
                        shown.append(lines[j])
                        j += 1
                    out.append((path, start + 1, text, shown))
            else:
                for m in re.finditer(r"`(halo-doctor [^`]+)`", line):
                    out.append((path, i + 1, m.group(1), []))
            i += 1
    return out


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
        for path, line, cmd, shown in commands():
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
            machine_free = "--root tests/fixtures" in cmd or re.match(
                r"halo-doctor (rules|explain)\b", cmd)
            if shown and machine_free:
                real = (run.stdout + run.stderr).splitlines()
                k = 0
                for want in shown:
                    if want.strip() in ("...", ""):
                        continue
                    # A line ending in "..." is shown cut short: the real line starts with it.
                    cut = want.rstrip().endswith("...")
                    head = want.rstrip()[:-3].rstrip() if cut else want.rstrip()
                    while k < len(real) and not (real[k].rstrip().startswith(head) if cut
                                                 else real[k].rstrip() == head):
                        k += 1
                    if k == len(real):
                        print(f"FAIL {path}:{line}: `{cmd}`: shown line not in the output in order: {want}")
                        fail = 1
                        break
                    k += 1
            print(f"ok {path}:{line}: {cmd} (exit {run.returncode})")
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
