#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Differential test: halo-doctor's reading of modprobe.d and /proc/cmdline against real kmod.

For hand-written cases (../shared/reference/parsing-facts.md) and generated ones (fixed seed), a
root is written with etc/, run/ and lib/modprobe.d and proc/cmdline. Real kmod reads the same
files: `modprobe -C etc -C run -C lib -c` inside `unshare --mount` with the crafted cmdline
bind-mounted over /proc/cmdline (kmod opens "/proc/cmdline" itself). Compared, per module the
doctor judges:
  - the options text of each modprobe.d options line, in kmod's order (`options M TEXT`),
  - the options kmod takes from the command line, and the modprobe.blacklist= names,
  - blacklist and install lines,
  - the value each parameter has when the module loads: kmod's options joined with ' '
    (kmod_module_get_options) and split by next_arg() below, written from kernel/params.c.
Usage: kmod_diff.py HALO_DOCTOR [N_GENERATED]. Exit 77 when modprobe or unshare is unavailable.
"""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import codecs
import ctypes

codecs.register_error(
    "halo_hex", lambda e: ("".join(f"\\x{b:02X}" for b in e.object[e.start:e.end]), e.end))

MODULES = ["amdgpu", "ttm", "amdttm", "amd_ttm", "amdkfd", "drm"]


def kernel_isspace(c):
    # lib/ctype.c: 9-13, 32 and 0xA0 are _S.
    return c in (9, 10, 11, 12, 13, 32, 0xA0)


def next_args(b, stop_at_dashes=True):
    """parse_args()/next_arg() of kernel/params.c over bytes; returns [(name, value|None)]."""
    b = b.split(b"\0")[0]
    out = []
    p = 0
    while p < len(b) and kernel_isspace(b[p]):
        p += 1
    while p < len(b):
        in_quote = quoted = False
        if b[p] == ord('"'):
            p += 1
            in_quote = quoted = True
        args = bytearray(b[p:])
        i = 0
        equals = 0
        while i < len(args):
            if kernel_isspace(args[i]) and not in_quote:
                break
            if equals == 0 and args[i] == ord("="):
                equals = i
            if args[i] == ord('"'):
                in_quote = not in_quote
            i += 1
        term = i  # args[i] is the terminator (space or end)
        val = None
        if equals:
            args[equals] = 0
            v = equals + 1
            if v < len(args) and args[v] == ord('"'):
                v += 1
                if args[i - 1] == ord('"'):
                    args[i - 1] = 0
            val = (v, i)
        if quoted and i > 0 and args[i - 1] == ord('"'):
            args[i - 1] = 0
        cut = bytes(args[:term])

        def cstr(start):
            s = cut[start:] if start < len(cut) else b""
            return s.split(b"\0")[0]

        name = cstr(0)
        value = None if val is None else cstr(val[0])
        p = p + i + (1 if i < len(args) else 0)
        while p < len(b) and kernel_isspace(b[p]):
            p += 1
        if stop_at_dashes and value is None and name == b"--":
            break
        out.append((name.replace(b"-", b"_"), value))
    return out


def effective(option_texts):
    joined = b" ".join(option_texts)
    vals = {}
    for name, value in next_args(joined):
        vals[name] = b"" if value is None else value
    return vals


def kmod_config(root):
    """`modprobe -c` over root's three modprobe.d directories and its proc/cmdline."""
    script = ('mount --bind "$1/proc/cmdline" /proc/cmdline && '
              'exec modprobe -C "$1/etc/modprobe.d" -C "$1/run/modprobe.d" -C "$1/lib/modprobe.d" -c')
    r = subprocess.run(["unshare", "--mount", "sh", "-c", script, "sh", root],
                       capture_output=True, timeout=20)
    lines = r.stdout.split(b"\n")
    conf = []
    for l in lines:
        if l.startswith(b"# End of configuration files"):
            break
        conf.append(l)
    return conf


def halo_facts(halo, root):
    r = subprocess.run([halo, "facts", "--root", root, "--no-runtime", "--format", "json"],
                       capture_output=True, timeout=30)
    if r.returncode != 0:
        raise RuntimeError(f"halo-doctor facts exited {r.returncode}: {r.stderr[-400:]!r}")
    return json.loads(r.stdout)["facts"]


def fact_value(facts, key, default=None):
    f = facts.get(key)
    if f is None or f.get("status") != "ok":
        return default
    return f["value"]


def enc(s):
    return s.encode("utf-8", "surrogateescape")


KMOD_VERSION = 0


def compare(halo, case, name):
    tmp = tempfile.mkdtemp(prefix="kmod-diff-")
    try:
        for d in ("etc", "run", "lib"):
            os.makedirs(os.path.join(tmp, d, "modprobe.d"))
        os.makedirs(os.path.join(tmp, "proc"))
        with open(os.path.join(tmp, "proc", "cmdline"), "wb") as f:
            f.write(case.get("cmdline", b"BOOT_IMAGE=/vmlinuz ro") + b"\n")
        for path, content in case.get("files", {}).items():
            full = os.path.join(tmp, path)
            if content is None:
                os.makedirs(full, exist_ok=True)
                continue
            with open(full, "wb") as f:
                f.write(content)
        conf = kmod_config(tmp)
        facts = halo_facts(halo, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    problems = []
    # kmod before v34 (commit 7805c95 "shared: Fix EOF handling in freadline_wrapped") stores
    # EOF as byte 0xFF after a backslash at the very end of a file; the doctor reads as v34 does.
    if KMOD_VERSION < 34 and any(c and c.endswith(b"\\") for c in case.get("files", {}).values()):
        return []
    # Split kmod's option lines into those from files and those from the command line: kmod
    # adds the command line's after every file's, and the doctor reports both separately.
    k_opts = {m: [] for m in MODULES}
    k_black = []
    k_install = []
    for l in conf:
        parts = l.split(b" ", 2)
        if parts[0] == b"options" and len(parts) == 3 and parts[1].decode(errors="replace") in k_opts:
            k_opts[parts[1].decode()].append(parts[2])
        elif parts[0] == b"blacklist" and len(parts) >= 2:
            k_black.append(l[len(b"blacklist "):])
        elif parts[0] == b"install" and len(parts) == 3:
            k_install.append((parts[1], parts[2]))
    def text(b):
        # Reports write bytes that are not UTF-8 as \xNN (src/core/sanitize.cpp): compare as the
        # report shows them.
        return b.decode("utf-8", "halo_hex")

    for m in MODULES:
        h_files = fact_value(facts, f"modprobe.options_text.{m}", [])
        h_cmd = fact_value(facts, f"kernel.cmdline.module_options.{m}", [])
        if h_files + h_cmd != [text(t) for t in k_opts[m]]:
            problems.append(f"options {m}: kmod {k_opts[m]!r} != doctor files {h_files!r} + cmdline {h_cmd!r}")
            continue
        # Values when the module loads, from modprobe.d alone (the doctor's modprobe.options.*).
        want = {text(k): text(v) for k, v in effective(k_opts[m][:len(h_files)]).items()}
        for key, f in facts.items():
            pre = f"modprobe.options.{m}."
            if key.startswith(pre):
                p = key[len(pre):]
                if want.get(p) != f["value"]:
                    problems.append(f"{key}: doctor {f['value']!r} != kernel next_arg {want.get(p)!r}")
                want.pop(p, None)
        if want:
            problems.append(f"modprobe.options.{m}.*: the doctor lacks {sorted(want)!r}")
    h_black_files = [enc(x) for x in fact_value(facts, "modprobe.blacklist", [])]
    h_black_cmd = [enc(x) for x in fact_value(facts, "kernel.cmdline.modprobe_blacklist", [])]
    k_black_files = [b for b in k_black if b.decode(errors="replace") in MODULES]
    # kmod prints the file blacklist first, then the command line's; count each side.
    k_black_cmd = k_black[len(k_black) - len(h_black_cmd):] if h_black_cmd else []
    if sorted(set(k_black_files) - set(h_black_cmd)) != sorted(set(h_black_files)):
        problems.append(f"blacklist: kmod {k_black!r} != doctor files {h_black_files!r}")
    if k_black_cmd != h_black_cmd:
        problems.append(f"modprobe.blacklist=: kmod {k_black!r} != doctor {h_black_cmd!r}")
    for m in INSTALL_MODULES:
        h = fact_value(facts, f"modprobe.install.{m}")
        # kmod_module_get_install_commands(): the first line whose pattern fnmatch()es the name.
        k = next((cmd for pat, cmd in k_install if libc_fnmatch(pat, m)), None)
        if (enc(h) if h is not None else None) != k:
            problems.append(f"install {m}: kmod {k!r} != doctor {h!r}")
    return [f"{name}: {p}" for p in problems]


INSTALL_MODULES = ["amdgpu", "ttm", "amdttm", "amd_ttm", "amdkfd"]
_LIBC = ctypes.CDLL(None)
_LIBC.fnmatch.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int]


def libc_fnmatch(pattern, name):
    """fnmatch(3) with flags 0, as libkmod calls it."""
    return _LIBC.fnmatch(pattern, name.encode(), 0) == 0


HAND = [
    ("hash mid-line is data", {"files": {"etc/modprobe.d/ttm.conf": b"options ttm pages_limit=4096 # was 31457280\n"}}),
    ("hash after module name", {"files": {"etc/modprobe.d/ttm.conf": b"options ttm # pages_limit=7\n"}}),
    ("indented hash is a command", {"files": {"etc/modprobe.d/ttm.conf": b"  # options ttm pages_limit=1\noptions ttm page_pool_size=2\n"}}),
    ("backslash continuation", {"files": {"etc/modprobe.d/a.conf": b"options amdgpu gttsize=1 \\\n  modeset=1\n"}}),
    ("backslash before other byte", {"files": {"etc/modprobe.d/a.conf": b"options ttm pages_li\\mit=3\\\n"}}),
    ("CRLF", {"files": {"etc/modprobe.d/a.conf": b"blacklist amdgpu\r\noptions ttm pages_limit=9\r\n"}}),
    ("dot file and non-conf names", {"files": {"etc/modprobe.d/.hidden.conf": b"options ttm pages_limit=1\n",
                                               "etc/modprobe.d/x.CONF": b"options ttm pages_limit=2\n",
                                               "etc/modprobe.d/y.conf.bak": b"options ttm pages_limit=3\n"}}),
    ("directory named .conf", {"files": {"etc/modprobe.d/d.conf": None,
                                         "lib/modprobe.d/d.conf": b"options ttm pages_limit=11\n"}}),
    ("alias files (kmod <= 32)", {"files": {"lib/modprobe.d/ttm.alias": b"options ttm pages_limit=12\n"}}),
    ("priority and sort order", {"files": {"lib/modprobe.d/50-a.conf": b"options ttm pages_limit=1\n",
                                           "etc/modprobe.d/50-a.conf": b"options ttm pages_limit=2\n",
                                           "run/modprobe.d/10-b.conf": b"options ttm pages_limit=3\n",
                                           "lib/modprobe.d/99-c.conf": b"options ttm page_pool_size=4\n"}}),
    ("dashes in names", {"files": {"etc/modprobe.d/a.conf": b"options amd-ttm pages-limit=5\nblacklist amd-gpu\n"}}),
    ("tabs", {"files": {"etc/modprobe.d/a.conf": b"options\tttm\tpages_limit=6\tpage_pool_size=6\n"}}),
    ("quotes", {"files": {"etc/modprobe.d/a.conf": b'options ttm "pages_limit=7" x="a b" y="c\n'}}),
    ("install lines", {"files": {"etc/modprobe.d/a.conf": b"install amdgpu /bin/false\ninstall ttm /sbin/modprobe --ignore-install ttm $CMDLINE_OPTS\n"}}),
    ("options without options", {"files": {"etc/modprobe.d/a.conf": b"options ttm\noptions ttm \noptions\n"}}),
    ("dashes end module options", {"files": {"etc/modprobe.d/a.conf": b"options ttm pages_limit=1 -- page_pool_size=2\n"}}),
    ("blacklist trailing words", {"files": {"etc/modprobe.d/a.conf": b"blacklist amdgpu because it hangs\n"}}),
    ("brackets in module names", {"files": {"etc/modprobe.d/a.conf": b"options am]dgpu x=1\noptions amd[gpu] y=2\n"}}),
    ("no-break space", {"files": {"etc/modprobe.d/a.conf": "options ttm pages_limit=123\u00a0456\n".encode()},
                        "cmdline": "ro amdgpu.gttsize=1\u00a02".encode()}),
    ("cmdline after dashes", {"cmdline": b"ro -- amdgpu.gttsize=7 ttm.pages_limit=8"}),
    ("cmdline blacklist several times", {"cmdline": b"modprobe.blacklist=amdgpu_top,amdgpu modprobe.blacklist=ttm"}),
    ("cmdline quoted token", {"cmdline": b'"ttm.pages_limit=1 2" amdgpu."x=1" amdgpu.a.b=2 amdgpu.c="d e"'}),
    ("cmdline malformed", {"cmdline": b"=abc amdgpu= .x=1 amdgpu.=3 ttm.pages_limit= amdgpu.modeset=00 ttm.pages_limit=0x1E00000"}),
    ("cmdline tabs and CR", {"cmdline": b"ro\tttm.pages_limit=3\ramdgpu.modeset=1\x0bamdgpu.x=2\x0cy"}),
    ("cmdline and files together", {"files": {"etc/modprobe.d/a.conf": b"options ttm pages_limit=1\n"},
                                     "cmdline": b"ttm.pages_limit=2 ttm.page_pool_size=3"}),
]

ALPHABET = [b"options", b"blacklist", b"install", b"ttm", b"amdgpu", b"amd-ttm", b"amdttm", b"drm",
            b"amdgpu_top", b"pages_limit", b"page-pool-size", b"gttsize", b"modeset", b"=", b"1",
            b"0x1E00000", b"010", b"abc", b'"', b"'", b"#", b"\\", b"\\\n", b" ", b"  ", b"\t", b"\r",
            b"\n", b"--", b".", b",", b"/bin/false", "\u00a0".encode(), b"[", b"]", b"-"]


def generated(n, seed=20261124):
    rng = random.Random(seed)
    cases = []
    for k in range(n):
        files = {}
        for _ in range(rng.randint(0, 3)):
            d = rng.choice(["etc", "run", "lib"])
            fname = rng.choice(["a.conf", "b.conf", "amd.conf", "ttm.alias", ".x.conf", "c.txt"])
            lines = []
            for _ in range(rng.randint(1, 4)):
                cmd = rng.choice([b"options", b"options", b"blacklist", b"install", b"#options", b" options"])
                mod = rng.choice([b"ttm", b"amdgpu", b"amd-ttm", b"amdttm", b"drm", b"amdgpu_top"])
                rest = b"".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 8)))
                lines.append(cmd + rng.choice([b" ", b"\t"]) + mod + b" " + rest)
            files[f"{d}/modprobe.d/{fname}"] = b"\n".join(lines) + rng.choice([b"\n", b"\r\n", b""])
        cmd = b" ".join(
            rng.choice([b"ro", b"quiet", b"--", b"nomodeset", b'"'])
            + b"".join(rng.choice(ALPHABET[3:]) for _ in range(rng.randint(0, 6)))
            for _ in range(rng.randint(1, 6)))
        cmd = cmd.replace(b"\n", b" ")
        cases.append((f"generated #{k}", {"files": files, "cmdline": cmd}))
    return cases


# --- install lines: which line kmod runs, for amdgpu and its dependency, by `modprobe -n -v` ---
# A module tree that depmod indexes: ttm.ko exports ttm_foo (kmod's depmod takes exports from
# __crc_* symbols, libkmod-elf.c kmod_elf_get_symbols) and amdgpu.ko uses it, so modules.dep says
# amdgpu needs ttm, as on a real kernel. Nothing is ever inserted: -n.
KVER = "6.1.0-halo-test"


def module_tree(tmp):
    d = os.path.join(tmp, "lib", "modules", KVER, "kernel")
    os.makedirs(d)
    srcs = {"ttm": "int __crc_ttm_foo;\nint ttm_foo;\n",
            "amdttm": "int __crc_amdttm_foo;\nint amdttm_foo;\n",
            "amdgpu": "extern int ttm_foo;\nint f(void) { return ttm_foo; }\n"}
    for m, src in srcs.items():
        c = os.path.join(d, m + ".c")
        with open(c, "w") as f:
            f.write(src)
        subprocess.run([GCC, "-c", c, "-o", os.path.join(d, m + ".ko")], check=True)
        os.unlink(c)
    subprocess.run([DEPMOD, "-b", tmp, KVER], check=True, capture_output=True)
    with open(os.path.join(tmp, "lib", "modules", KVER, "modules.dep")) as f:
        dep = f.read()
    if "kernel/amdgpu.ko: kernel/ttm.ko" not in dep:
        raise RuntimeError(f"depmod did not record amdgpu's dependency on ttm: {dep!r}")


def dry_run(tree, conf_root, module):
    r = subprocess.run([MODPROBE, "-d", tree, "-S", KVER, "-C", f"{conf_root}/etc/modprobe.d",
                        "-C", f"{conf_root}/run/modprobe.d", "-C", f"{conf_root}/lib/modprobe.d",
                        "-n", "-v", module], capture_output=True, timeout=20)
    return [l for l in r.stdout.split(b"\n") if l]


INSTALL_CASES = [
    ("install amdgpu /bin/false", {"a.conf": b"install amdgpu /bin/false\n"}),
    ("the first matching line wins", {"a.conf": b"install amdgpu /bin/true\ninstall amdgpu /bin/false\n"}),
    ("a pattern matches", {"a.conf": b"install amd* /sbin/modprobe --ignore-install $MODPROBE_MODULE\ninstall amdgpu /bin/false\n"}),
    ("a pattern with brackets", {"a.conf": b"install amd[g]pu /bin/false\ninstall t?m /bin/false\n"}),
    ("dashes in the pattern", {"a.conf": b"install amd-gpu /bin/false\n"}),
    ("file order across directories", {"b.conf": b"install ttm /bin/sh -c 'exit 1'\n",
                                       "a.conf": b"install ttm /sbin/modprobe -i ttm $CMDLINE_OPTS\n"}),
    ("ttm's line runs for amdgpu", {"a.conf": b"install ttm /bin/false\n"}),
    ("a softdep makes kmod ignore the line", {"a.conf": b"install amdgpu /bin/false\nsoftdep amdgpu pre: ttm\n"}),
    ("an empty softdep does not", {"a.conf": b"install amdgpu /bin/false\nsoftdep amdgpu pre:\n"}),
    ("a softdep on ttm", {"a.conf": b"install ttm /bin/false\nsoftdep ttm pre: amdttm\n"}),
    ("install without a command", {"a.conf": b"install amdgpu\ninstall amdgpu \ninstall ttm /bin/false\n"}),
    ("wrapper", {"a.conf": b"install amdgpu /sbin/modprobe --ignore-install amdgpu $CMDLINE_OPTS && echo ok\noptions amdgpu x=1\n"}),
]


def compare_install(halo, tree, name, files):
    tmp = tempfile.mkdtemp(prefix="kmod-install-")
    try:
        for d in ("etc", "run", "lib"):
            os.makedirs(os.path.join(tmp, d, "modprobe.d"))
        os.makedirs(os.path.join(tmp, "proc"))
        with open(os.path.join(tmp, "proc", "cmdline"), "wb") as f:
            f.write(b"ro\n")
        for i, (fname, content) in enumerate(files.items()):
            d = ("etc", "lib", "run")[i % 3]
            with open(os.path.join(tmp, d, "modprobe.d", fname), "wb") as f:
                f.write(content)
        amdgpu = dry_run(tree, tmp, "amdgpu")
        facts = halo_facts(halo, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    problems = []
    # With no post: softdeps on them, kmod's last two actions are ttm's, then amdgpu's.
    if len(amdgpu) < 2:
        return [f"{name}: modprobe -n -v amdgpu printed {amdgpu!r}"]
    for m, action in (("amdgpu", amdgpu[-1]), ("ttm", amdgpu[-2])):
        h = fact_value(facts, f"modprobe.install.{m}")
        effect = fact_value(facts, f"modprobe.install_effect.{m}")
        runs = h is not None and effect != "ignored"
        if action.startswith(b"install "):
            if not runs or not action[len(b"install "):].startswith(enc(h)):
                problems.append(f"{m}: kmod runs {action!r}, the doctor has {h!r} ({effect})")
        elif runs:
            problems.append(f"{m}: kmod inserts it ({action!r}), the doctor runs {h!r} ({effect})")
    return [f"{name}: {p}" for p in problems]


# --- install commands run by real /bin/sh, with recording modprobe and insmod ---
# kmod runs an install command with system(3) (command_do), that is /bin/sh -c, after replacing
# $CMDLINE_OPTS (module_do_install_commands) and with MODPROBE_MODULE set. Here /usr/sbin is a
# directory of stand-ins inside `unshare --mount`: each records its arguments and exits
# $STUB_STATUS (modprobe of another module) or 0; a modprobe of the module itself without
# --ignore-install would run the same line again forever, so it records that and exits 1. Whether
# the module loaded is then read from the record with Python's own GNU getopt, an implementation
# independent of the doctor's.
STUB = r"""#!/usr/bin/python3
import getopt, os, sys
prog = os.path.basename(sys.argv[0])
args = sys.argv[1:]
mod = os.environ["HALO_MODULE"]
loaded = False
status = int(os.environ.get("STUB_STATUS", "0"))
if prog == "modprobe":
    try:
        opts, rest = getopt.gnu_getopt(args, "arw:RibfDcnC:d:S:sqvVh", [
            "all", "remove", "remove-dependencies", "remove-holders", "wait=", "resolve-alias",
            "first-time", "ignore-install", "ignore-remove", "use-blacklist", "force",
            "force-modversion", "force-vermagic", "show-depends", "showconfig", "show-config",
            "show-modversions", "dump-modversions", "show-exports", "dry-run", "show",
            "config=", "dirname=", "set-version=", "syslog", "quiet", "verbose", "version",
            "help"])
    except getopt.GetoptError:
        sys.exit(1)
    flags = {o for o, _ in opts}
    names = rest if ("-a" in flags or "--all" in flags) else rest[:1]
    if not rest:
        sys.exit(1)
    quiet_flags = {"-n", "--dry-run", "--show", "-D", "--show-depends", "-r", "--remove",
                   "--remove-dependencies", "--remove-holders", "-c", "--showconfig",
                   "--show-config", "-R", "--resolve-alias", "-V", "--version", "-h", "--help",
                   "--show-modversions", "--dump-modversions", "--show-exports"}
    ignore = bool(flags & {"-i", "--ignore-install", "--ignore-remove"})
    if flags & quiet_flags:
        sys.exit(0)
    if any(n.replace("-", "_") == mod for n in names):
        if not ignore:
            with open(os.environ["HALO_LOG"], "a") as f:
                f.write("recursion\n")
            sys.exit(1)
        loaded = True
        status = 0
elif prog == "insmod":
    files = [a for a in args if not a.startswith("-")]
    if not files:
        sys.exit(1)
    b = os.path.basename(files[0])
    for suf in (".xz", ".zst", ".gz"):
        if b.endswith(suf):
            b = b[: -len(suf)]
    loaded = b.endswith(".ko") and b[:-3].replace("-", "_") == mod
    status = 0 if loaded else 1
if loaded:
    with open(os.environ["HALO_LOG"], "a") as f:
        f.write("loaded\n")
sys.exit(status)
"""


def real_shell(stubdir, cmd, module, stub_status):
    log = os.path.join(stubdir, "..", "log")
    if os.path.exists(log):
        os.unlink(log)
    script = 'mount --bind "$1" /usr/sbin && shift && exec /bin/sh -c "$@"'
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HALO_LOG": log, "HALO_MODULE": module,
           "MODPROBE_MODULE": module, "STUB_STATUS": str(stub_status)}
    r = subprocess.run(["unshare", "--mount", "/bin/sh", "-c", script, "sh", stubdir,
                        cmd.replace(b"$CMDLINE_OPTS", b"")], env=env, capture_output=True, timeout=20)
    rec = open(log).read().split() if os.path.exists(log) else []
    return "loaded" in rec, r.returncode == 0


SHELL_CASES = [
    b"/bin/false", b"false", b"/bin/true", b":", b"/bin/sh -c 'exit 1'", b"/bin/sh -c \"exit 0\"",
    b"echo disabled >&2; exit 1", b"/sbin/modprobe --ignore-install amdgpu $CMDLINE_OPTS",
    b"/sbin/modprobe -i amdgpu", b"modprobe -qi amdgpu", b"/sbin/modprobe amdgpu --ignore-install",
    b"/sbin/modprobe --ignore-inst amdgpu", b"/sbin/modprobe -i -C /etc/x.conf amdgpu",
    b"/sbin/modprobe -a -i ttm amdgpu", b"/sbin/modprobe --ignore-install ttm amdgpu",
    b"/sbin/modprobe -n -i amdgpu", b"/sbin/modprobe -r amdgpu", b"/sbin/modprobe amdgpu",
    b"/sbin/modprobe --ignore-install $MODPROBE_MODULE", b"/sbin/modprobe -i ${MODPROBE_MODULE}",
    b"/sbin/insmod /lib/modules/6.8.0/updates/dkms/amdgpu.ko.zst",
    b"/sbin/modprobe barney; /sbin/modprobe --ignore-install amdgpu $CMDLINE_OPTS",
    b"/sbin/modprobe barney && /sbin/modprobe --ignore-install amdgpu",
    b"/bin/false && /sbin/modprobe -i amdgpu", b"/bin/false || /sbin/modprobe -i amdgpu",
    b"exit 3; /sbin/modprobe -i amdgpu", b"/sbin/modprobe -i amdgpu; false",
    b"! /sbin/modprobe -i amdgpu", b"/sbin/modprobe -i amdgpu | false",
    b"sleep 0; exec /sbin/modprobe --ignore-install amdgpu 2>/dev/null",
    b"/bin/sh -c '/sbin/modprobe -i amdgpu && echo loaded'", b"sh -c 'exit 0'; /sbin/modprobe -i amdgpu",
    b"'/sbin/modprobe' \"-i\" am\\dgpu", b"/sbin/modprobe -i amdgpu # comment", b"/sbin/modprobe -i amd-gpu",
]
SHELL_WORDS = [b"/sbin/modprobe", b"modprobe", b"--ignore-install", b"-i", b"-n", b"-r", b"-q", b"-a",
               b"amdgpu", b"amd-gpu", b"ttm", b"barney", b"$CMDLINE_OPTS", b"$MODPROBE_MODULE",
               b"/bin/false", b"false", b"true", b":", b"exit", b"1", b"0", b"echo", b";", b"&&",
               b"||", b"|", b"!", b"'", b'"', b"sh", b"-c", b"/bin/sh", b">/dev/null", b"2>&1",
               b"/sbin/insmod", b"/lib/amdgpu.ko", b"\\", b"#", b"&"]


def shell_generated(n, seed=20261127):
    rng = random.Random(seed)
    return [b" ".join(rng.choice(SHELL_WORDS) for _ in range(rng.randint(1, 7))) for _ in range(n)]


def compare_shell(halo, stubdir, cmd):
    tmp = tempfile.mkdtemp(prefix="kmod-shell-")
    problems = []
    try:
        for d in ("etc", "run", "lib"):
            os.makedirs(os.path.join(tmp, d, "modprobe.d"))
        with open(os.path.join(tmp, "etc", "modprobe.d", "a.conf"), "wb") as f:
            f.write(b"install amdgpu " + cmd + b"\ninstall ttm " + cmd.replace(b"amdgpu", b"ttm") + b"\n")
        facts = halo_facts(halo, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for m, c in (("amdgpu", cmd), ("ttm", cmd.replace(b"amdgpu", b"ttm"))):
        if fact_value(facts, f"modprobe.install.{m}") is None:
            continue  # kmod's own syntax error: no command (checked by the -c comparison)
        own = fact_value(facts, f"modprobe.install_effect.{m}")
        as_dep = fact_value(facts, f"modprobe.install_effect_as_dependency.{m}")
        for stub_status in (0, 1):
            loaded, ok = real_shell(stubdir, c, m, stub_status)
            if own == "loads" and not loaded or own == "blocks" and loaded:
                problems.append(f"install {m} {c!r}: /bin/sh {'loads' if loaded else 'does not load'} "
                                f"it (other modprobe exits {stub_status}), the doctor says {own}")
            ready = loaded and ok
            if as_dep == "loads" and not ready or as_dep == "blocks" and ready:
                problems.append(f"install {m} {c!r} as a dependency: /bin/sh loaded={loaded} status "
                                f"ok={ok} (other modprobe exits {stub_status}), the doctor says {as_dep}")
    return problems


def install_checks(halo, n_shell):
    failures = []
    for tool in (GCC, DEPMOD):
        if not os.path.exists(tool):
            print(f"SKIP install checks: {tool} is not installed")
            return failures, 0
    tree = tempfile.mkdtemp(prefix="kmod-tree-")
    stubs = tempfile.mkdtemp(prefix="kmod-stubs-")
    try:
        module_tree(tree)
        for name, files in INSTALL_CASES:
            failures += compare_install(halo, tree, name, files)
        stubdir = os.path.join(stubs, "sbin")
        os.makedirs(stubdir)
        for prog in ("modprobe", "insmod"):
            path = os.path.join(stubdir, prog)
            with open(path, "w") as f:
                f.write(STUB)
            os.chmod(path, 0o755)
        cmds = SHELL_CASES + shell_generated(n_shell)
        for c in cmds:
            failures += compare_shell(halo, stubdir, c)
    finally:
        shutil.rmtree(tree, ignore_errors=True)
        shutil.rmtree(stubs, ignore_errors=True)
    return failures, len(INSTALL_CASES) + len(cmds)


GCC = "/usr/bin/gcc"
DEPMOD = "/usr/sbin/depmod"
MODPROBE = "/usr/sbin/modprobe"


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    halo = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    if shutil.which("modprobe") is None and not os.path.exists("/sbin/modprobe"):
        print("SKIP: kmod's modprobe is not installed (Debian package kmod)")
        return 77
    probe = subprocess.run(["unshare", "--mount", "true"], capture_output=True)
    if probe.returncode != 0:
        print(f"SKIP: unshare --mount is not permitted here: {probe.stderr.decode(errors='replace').strip()}")
        return 77
    kmod_version = subprocess.run(["modprobe", "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    global KMOD_VERSION
    KMOD_VERSION = int("".join(ch for ch in kmod_version.split()[-1] if ch.isdigit()) or 0)
    failures = []
    cases = HAND + generated(n)
    for name, case in cases:
        failures += compare(halo, case, name)
    install_failures, n_install = install_checks(halo, max(n // 3, 20))
    failures += install_failures
    print(f"{len(cases)} cases against {kmod_version}, {n_install} install-line cases against its "
          f"modprobe -n -v and /bin/sh: {len(failures)} disagreements")
    for f in failures[:40]:
        print("  " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
