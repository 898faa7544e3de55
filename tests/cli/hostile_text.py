#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Issue 32, sections 1 and 3, end to end as a user runs the doctor: a hostile machine, hostile
bundles and a hostile model config never run a command and never reach a terminal as an escape
sequence.

1. `fix` on copies of the stack-grub-debian and stack-nixos fixture roots (real Ubuntu and NixOS
   boot layouts, their README.md) with payloads planted where any package or user can put text: the
   host name (/proc/sys/kernel/hostname), PRETTY_NAME (/etc/os-release), a file name under
   /etc/default/grub.d (boot-stack evidence and a note), a modprobe.d file that sets the TTM limit
   (a note naming it), a .nix file name (the NixOS configuration lines). The script: no raw control
   byte, `bash -n`, and a --dry-run against a copy of the root that never creates the canary; the
   Nix snippet parses with nix-instantiate and holds the marker only inside strings. stderr: no
   raw control byte.
2. `fleet compare` of facts files whose host name and PRETTY_NAME hold OSC 52, OSC 0 and CSI 2J:
   no ESC, BEL or C1 byte on stdout or stderr, text and JSON.
3. `plan` with a config.json whose _name_or_path holds those sequences: none on stdout/stderr.

Usage: hostile_text.py HALO-DOCTOR FIXTURES-DIR
"""
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

BASH = "/bin/bash"
NIX = "/usr/bin/nix-instantiate"
CANARY = "halo_canary"

# Payloads for text fields (file contents); file names cannot hold "/" or NUL.
TEXT_PAYLOADS = [
    f"$(touch {CANARY})",
    f"`touch {CANARY}`",
    f"x; touch {CANARY}; #",
    f"x'; touch {CANARY}; '",
    "\x1b]52;c;aGFsbw==\x07osc52",
    "\x1b[2J\x1b]0;pwned\x07title",
    "\u009b31mC1",
    "\u202ereversed",
]
NAME_PAYLOADS = [
    f"x\ntouch {CANARY}\n#",
    f"$(touch {CANARY})",
    f"x'$(touch {CANARY})'",
    "\x1b]52;c;aGFsbw==\x07",
    "x\n}; haloPwn = 1; y = {\n",
]

failures = []


def bad(msg):
    failures.append(msg)
    print("FAIL", msg)


def raw_control(data: bytes) -> bool:
    """Any C0 control but newline and tab, DEL, or a C1 control (UTF-8 C2 80..C2 9F)."""
    return re.search(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]", data) is not None


def run(args, **kw):
    return subprocess.run(args, capture_output=True, timeout=120, **kw)


def fix_case(halo, fixtures, work, fixture, plant, label, stack):
    root = work / "root"
    if root.exists():
        shutil.rmtree(root)
    shutil.copytree(fixtures / fixture, root, symlinks=True)
    plant(root)
    r = run([halo, "fix", "--root", str(root), "--no-runtime"])
    if r.returncode != 0:
        bad(f"{label}: fix exited {r.returncode}: {r.stderr[-300:]!r}")
        return
    if raw_control(r.stderr):
        bad(f"{label}: raw control bytes on stderr: {r.stderr[-300:]!r}")
    if raw_control(r.stdout):
        bad(f"{label}: raw control bytes in the {stack} output")
    if stack == "nixos":
        snippet = work / "fix.nix"
        snippet.write_bytes(r.stdout)
        p = run([NIX, "--parse", str(snippet)])
        if p.returncode != 0:
            bad(f"{label}: nix-instantiate --parse failed: {p.stderr[-300:]!r}")
            return
        code = re.sub(rb'"(\\.|[^"\\])*"', b'""', p.stdout)
        if b"haloPwn" in code or CANARY.encode() in code:
            bad(f"{label}: the payload is Nix code: {p.stdout[:400]!r}")
        return
    script = work / "fix.sh"
    script.write_bytes(r.stdout)
    if run([BASH, "-n", str(script)]).returncode != 0:
        bad(f"{label}: bash -n rejects the script")
    env = dict(os.environ, HALO_FIX_ROOT=str(root), HALO_FIX_ALLOW_NON_ROOT="1")
    run([BASH, str(script), "--dry-run"], cwd=work, env=env, stdin=subprocess.DEVNULL)
    for where in (work, root):
        if (where / CANARY).exists():
            bad(f"{label}: the payload ran ({where / CANARY} exists)")
            (where / CANARY).unlink()


def main():
    halo = os.path.realpath(sys.argv[1])
    fixtures = pathlib.Path(sys.argv[2]).resolve()
    for tool in (BASH, NIX):
        if not os.access(tool, os.X_OK):
            print(f"{tool} is missing (scripts/setup.sh installs it)")
            return 1
    combos = 0
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)

        # 1. fix: grub-debian
        def os_release(root, p):
            f = root / "etc/os-release"
            lines = [l for l in f.read_bytes().split(b"\n") if not l.startswith(b"PRETTY_NAME=")]
            f.write_bytes(b"\n".join(lines) + b'\nPRETTY_NAME="' + p.encode() + b'"\n')

        def hostname(root, p):
            f = root / "proc/sys/kernel/hostname"
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_bytes(p.encode() + b"\n")

        for p in TEXT_PAYLOADS:
            for name, plant in (("hostname", hostname), ("os-release", os_release)):
                combos += 1
                fix_case(halo, fixtures, work, "stack-grub-debian",
                         lambda r, p=p, plant=plant: plant(r, p),
                         f"grub-debian {name} {p!r}", "grub-debian")
        for p in NAME_PAYLOADS:
            def grub_d(root, p=p):
                (root / "etc/default/grub.d" / (p + ".cfg")).write_text("# planted\n")

            def modprobe_d(root, p=p):
                d = root / "etc/modprobe.d"
                d.mkdir(parents=True, exist_ok=True)
                (d / (p + ".conf")).write_text("options ttm pages_limit=1024\n")

            for name, plant in (("grub.d name", grub_d), ("modprobe.d name", modprobe_d)):
                combos += 1
                fix_case(halo, fixtures, work, "stack-grub-debian", plant,
                         f"grub-debian {name} {p!r}", "grub-debian")

            def nix_name(root, p=p):
                (root / "etc/nixos" / (p + ".nix")).write_text(
                    '{ ... }: { boot.kernelParams = [ "ttm.pages_limit=4096" ]; }\n')

            combos += 1
            fix_case(halo, fixtures, work, "stack-nixos", nix_name, f"nixos .nix name {p!r}",
                     "nixos")
            for p2 in TEXT_PAYLOADS[:2]:
                combos += 1
                fix_case(halo, fixtures, work, "stack-nixos",
                         lambda r, p2=p2: hostname(r, p2), f"nixos hostname {p2!r}", "nixos")

        # 2. fleet compare: facts files with hostile names.
        base = work / "node.json"
        r = run([halo, "facts", "--root", str(fixtures / "stack-grub-debian"), "--no-runtime",
                 "--format", "json", "-o", str(base)])
        if r.returncode != 0:
            bad(f"facts: exit {r.returncode} {r.stderr[-300:]!r}")
        else:
            doc = json.loads(base.read_text())
            files = []
            for i, p in enumerate(TEXT_PAYLOADS[4:]):
                text = json.dumps(doc)
                text = text.replace('"strix-halo"', json.dumps("node" + p))
                text = text.replace('"Ubuntu 24.04.3 LTS"', json.dumps("Ubuntu" + p))
                f = work / f"node{i}.json"
                f.write_text(text)
                files.append(str(f))
            for fmt in ("text", "json"):
                combos += 1
                r = run([halo, "fleet", "compare", "--format", fmt, *files])
                if raw_control(r.stdout) or raw_control(r.stderr):
                    bad(f"fleet compare --format {fmt}: raw control bytes reach the terminal")
                if fmt == "text" and b"\\x1B]52" not in r.stdout:
                    bad("fleet compare: the escaped host name is not shown")

        # 3. plan: a config.json with escape sequences in _name_or_path.
        model = work / "model"
        model.mkdir()
        cfg = {"_name_or_path": "\x1b]52;c;aGFsbw==\x07\x1b[2Jevil", "model_type": "llama",
               "hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 16,
               "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
               "max_position_embeddings": 131072, "tie_word_embeddings": True,
               "torch_dtype": "bfloat16"}
        (model / "config.json").write_text(json.dumps(cfg))
        for fmt in ("text", "json"):
            combos += 1
            r = run([halo, "plan", "--model", str(model), "--root",
                     str(fixtures / "strix-halo-default-ttm"), "--no-runtime", "--format", fmt])
            if r.returncode not in (0, 1, 2, 3, 4):
                bad(f"plan --format {fmt}: exit {r.returncode} {r.stderr[-300:]!r}")
            if raw_control(r.stdout) or raw_control(r.stderr):
                bad(f"plan --format {fmt}: raw control bytes reach the terminal")

        # 4. usage errors quote what was given: a hostile --stack value.
        combos += 1
        r = run([halo, "fix", "--root", str(fixtures / "stack-grub-debian"), "--stack",
                 "\x1b]52;c;aGFsbw==\x07"])
        if r.returncode != 2 or raw_control(r.stderr):
            bad(f"fix --stack ESC...: exit {r.returncode}, stderr {r.stderr[-200:]!r}")

    print(f"{combos} hostile inputs, {len(failures)} failures")
    print(f"{combos - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
