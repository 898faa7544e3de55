#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The amdgpu module file and its signature (issue 21), against the real tools: module-like ELF
# objects built with gcc (strings in ".modinfo", as MODULE_FIRMWARE and MODULE_LICENSE make them),
# signed the way the kernel's scripts/sign-file does (a detached PKCS#7/CMS DER signature made with
# the openssl CLI from a throwaway key, then struct module_signature {algo 0, hash 0, id_type 2,
# signer_len 0, key_id_len 0, pad[3], sig_len big-endian} and "~Module signature appended~\n":
# libkmod/libkmod-signature.c, research-fw.md Q4.2), compressed with zstd and xz, indexed by the
# real depmod in fixture-like roots; the doctor's facts must match what modinfo (kmod) reads from
# the same file. Also: an unsigned module, links out of the root, truncated and garbage .ko.zst,
# a decompression bomb, a file over the size bound, no modules.dep.bin; and check's verdict of
# dkms-module-unsigned with Secure Boot on.
# Usage: module_signature.sh HALO_DOCTOR. Exit 77 (skipped) where a tool is missing.
set -euo pipefail
bin=$(realpath "$1")
PATH=$PATH:/usr/sbin:/sbin
for tool in gcc openssl zstd xz depmod modinfo python3; do
  if ! command -v "$tool" >/dev/null; then
    echo "SKIP: $tool is not installed (scripts/setup.sh lists gcc openssl zstd xz-utils kmod)"
    exit 77
  fi
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
rel=6.8.0-45-generic

# A module-like object: .modinfo strings as the kernel's MODULE_INFO() lays them out.
cat >mod.c <<'EOF'
static const char fw1[] __attribute__((section(".modinfo"), used, aligned(1))) = "firmware=amdgpu/gc_11_5_1_mes_2.bin";
static const char fw2[] __attribute__((section(".modinfo"), used, aligned(1))) = "firmware=amdgpu/gc_11_5_1_mes1.bin";
static const char fw3[] __attribute__((section(".modinfo"), used, aligned(1))) = "firmware=amdgpu/psp_14_0_1_toc.bin";
static const char ver[] __attribute__((section(".modinfo"), used, aligned(1))) = "version=6.12.12";
static const char lic[] __attribute__((section(".modinfo"), used, aligned(1))) = "license=GPL and additional rights";
static const char nam[] __attribute__((section(".modinfo"), used, aligned(1))) = "name=amdgpu";
EOF
gcc -c -o unsigned.ko mod.c
# A throwaway signing key, as DKMS makes it (dkms.in prepare_mok: CN=DKMS module signing key).
openssl req -new -x509 -nodes -days 1 -subj "/CN=DKMS module signing key" -newkey rsa:2048 \
  -keyout key.pem -out cert.pem 2>/dev/null
# sign-file: CMS_NOCERTS | CMS_BINARY | CMS_DETACHED, no attributes, no S/MIME capabilities.
openssl cms -sign -in unsigned.ko -signer cert.pem -inkey key.pem -binary -outform DER -nocerts \
  -noattr -nosmimecap -md sha512 -out sig.p7s
python3 - <<'PY'
import struct
body = open("unsigned.ko", "rb").read()
sig = open("sig.p7s", "rb").read()
# struct module_signature: algo, hash, id_type (2 = PKCS#7), signer_len, key_id_len, pad[3], sig_len (be32)
info = struct.pack(">BBBBB3xI", 0, 0, 2, 0, 0, len(sig))
open("signed.ko", "wb").write(body + sig + info + b"~Module signature appended~\n")
PY

# make_root NAME: a root with the kernel release, Secure Boot on and lockdown integrity.
make_root() {
  local r=$tmp/$1
  mkdir -p "$r/proc/sys/kernel" "$r/sys/firmware/efi/efivars" "$r/sys/kernel/security" \
    "$r/lib/modules/$rel/kernel/drivers/gpu/drm/amd/amdgpu" "$r/lib/modules/$rel/updates/dkms"
  echo "$rel" >"$r/proc/sys/kernel/osrelease"
  printf '\006\000\000\000\001' >"$r/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
  echo "none [integrity] confidentiality" >"$r/sys/kernel/security/lockdown"
  mkdir -p "$r/sys/bus/pci/devices/0000:03:00.0"
  echo 0x1002 >"$r/sys/bus/pci/devices/0000:03:00.0/vendor"
  echo 0x7448 >"$r/sys/bus/pci/devices/0000:03:00.0/device"
  echo 0x030000 >"$r/sys/bus/pci/devices/0000:03:00.0/class"
  # The kernel's own amdgpu (unsigned here; only the DKMS copy must be the one chosen).
  zstd -q unsigned.ko -o "$r/lib/modules/$rel/kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko.zst"
}
index() { depmod -b "$tmp/$1" "$rel" 2>/dev/null; }
# A relative --root (libkmod makes its directory absolute; the path must still come out right).
facts() { (cd "$tmp" && "$bin" facts --root "$1" --no-runtime --format json -o "$1.json"); }

# 1. Ubuntu: a signed DKMS build in updates/dkms, zstd-compressed.
make_root signed-zst
zstd -q signed.ko -o signed-zst/lib/modules/$rel/updates/dkms/amdgpu.ko.zst
index signed-zst
facts signed-zst
# 2. Fedora: an unsigned DKMS build in extra/, xz-compressed (--check=crc32 as the kernel's modules).
make_root unsigned-xz
mkdir -p unsigned-xz/lib/modules/$rel/extra
xz --check=crc32 -c unsigned.ko >unsigned-xz/lib/modules/$rel/extra/amdgpu.ko.xz
index unsigned-xz
facts unsigned-xz
# 3. Only the kernel's own module.
make_root inbox
index inbox
facts inbox
# 4. The DKMS path is a link to a real signed module outside the root: absolute, and relative
# climbing out. Neither may be read (links resolve inside the root).
mkdir -p outside
cp signed-zst/lib/modules/$rel/updates/dkms/amdgpu.ko.zst outside/amdgpu.ko.zst
make_root link-abs
cp outside/amdgpu.ko.zst link-abs/lib/modules/$rel/updates/dkms/amdgpu.ko.zst
index link-abs
rm link-abs/lib/modules/$rel/updates/dkms/amdgpu.ko.zst
ln -s "$tmp/outside/amdgpu.ko.zst" link-abs/lib/modules/$rel/updates/dkms/amdgpu.ko.zst
facts link-abs
make_root link-rel
cp outside/amdgpu.ko.zst link-rel/lib/modules/$rel/updates/dkms/amdgpu.ko.zst
index link-rel
rm link-rel/lib/modules/$rel/updates/dkms/amdgpu.ko.zst
ln -s ../../../../../../../outside/amdgpu.ko.zst link-rel/lib/modules/$rel/updates/dkms/amdgpu.ko.zst
facts link-rel
# An absolute link that stays inside the root (as /var/lib/dkms on the machine the root came
# from): followed there, and read.
make_root link-in
cp outside/amdgpu.ko.zst link-in/lib/modules/$rel/updates/dkms/amdgpu.ko.zst
index link-in
rm link-in/lib/modules/$rel/updates/dkms/amdgpu.ko.zst
mkdir -p link-in/var/lib/dkms/amdgpu
cp outside/amdgpu.ko.zst link-in/var/lib/dkms/amdgpu/amdgpu.ko.zst
ln -s /var/lib/dkms/amdgpu/amdgpu.ko.zst link-in/lib/modules/$rel/updates/dkms/amdgpu.ko.zst
facts link-in
# amdgpu built into the kernel (modules.builtin, indexed by depmod into modules.builtin.bin).
make_root builtin
rm -r builtin/lib/modules/$rel/kernel/drivers
echo kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko >builtin/lib/modules/$rel/modules.builtin
index builtin
facts builtin
modinfo -b builtin -k "$rel" -n amdgpu >builtin/modinfo.n
# 5. A truncated .ko.zst and one of random bytes.
make_root truncated
head -c 300 signed-zst/lib/modules/$rel/updates/dkms/amdgpu.ko.zst >truncated/lib/modules/$rel/updates/dkms/amdgpu.ko.zst
index truncated
facts truncated
make_root garbage
head -c 4096 /dev/urandom >garbage/lib/modules/$rel/updates/dkms/amdgpu.ko.zst
index garbage
facts garbage
# 6. A decompression bomb: 3 GiB of zeros in a few hundred KiB of zstd (the child's address space
# limit stops it), and a file over the 128 MiB bound (never opened).
make_root bomb
cp unsigned.ko bomb/lib/modules/$rel/updates/dkms/amdgpu.ko
index bomb
rm bomb/lib/modules/$rel/updates/dkms/amdgpu.ko
head -c 3G /dev/zero | zstd -q -1 --no-progress >bomb/lib/modules/$rel/updates/dkms/amdgpu.ko
make_root huge
cp unsigned.ko huge/lib/modules/$rel/updates/dkms/amdgpu.ko
index huge
truncate -s 200M huge/lib/modules/$rel/updates/dkms/amdgpu.ko
facts huge
# 7. No depmod index at all.
make_root no-index
facts no-index
start=$(date +%s)
facts bomb
echo "bomb root read in $(($(date +%s) - start)) s"

# What modinfo reads from the same files.
for f in signed-zst/lib/modules/$rel/updates/dkms/amdgpu.ko.zst unsigned-xz/lib/modules/$rel/extra/amdgpu.ko.xz; do
  for field in signer sig_hashalgo sig_key firmware version; do
    modinfo -F "$field" "$f" >"$(dirname "$f")/modinfo.$field" || true
  done
done
modinfo -b signed-zst -k "$rel" -n amdgpu >signed-zst/modinfo.n

# A plain build's libkmod gets ENOMEM at the address-space limit. A sanitizer build reports the
# failed allocation and dies (allocator_may_return_null=0), or hangs in its report until the
# parent kills it at the time limit: either way the fact names the child's end.
bomb_reason="Cannot allocate memory"
if ldd "$bin" | grep libasan >/dev/null; then bomb_reason="the child process"; fi

python3 - "$tmp" "$rel" "$bomb_reason" <<'PY'
import json, os, sys
tmp, rel, bomb_reason = sys.argv[1], sys.argv[2], sys.argv[3]
def facts(name):
    return json.load(open(os.path.join(tmp, name + ".json")))["facts"]
def modinfo(d, field):
    with open(os.path.join(tmp, d, "modinfo." + field)) as f:
        return [l for l in f.read().split("\n") if l]

# 1. signed, zstd: the DKMS copy wins over kernel/, as modprobe (modinfo -n) picks it.
f = facts("signed-zst")
d = f"signed-zst/lib/modules/{rel}/updates/dkms"
picked = open(os.path.join(tmp, "signed-zst/modinfo.n")).read().strip()
assert picked.endswith(f"/lib/modules/{rel}/updates/dkms/amdgpu.ko.zst"), picked
assert f["amdgpu.module.path"]["value"] == f"/lib/modules/{rel}/updates/dkms/amdgpu.ko.zst", f["amdgpu.module.path"]
assert f["amdgpu.module.origin"]["value"] == "dkms", f["amdgpu.module.origin"]
assert f["amdgpu.module.signed"]["value"] is True, f["amdgpu.module.signed"]
assert modinfo(d, "signer") == ["DKMS module signing key"], modinfo(d, "signer")
assert f["amdgpu.module.signer"]["value"] == modinfo(d, "signer")[0], f["amdgpu.module.signer"]
assert f["amdgpu.module.sig_hashalgo"]["value"] == modinfo(d, "sig_hashalgo")[0] == "sha512"
assert f["amdgpu.module.sig_key"]["value"] == modinfo(d, "sig_key")[0], (f["amdgpu.module.sig_key"], modinfo(d, "sig_key"))
assert f["amdgpu.module.firmware"]["value"] == modinfo(d, "firmware"), (f["amdgpu.module.firmware"], modinfo(d, "firmware"))
assert "amdgpu/gc_11_5_1_mes_2.bin" in f["amdgpu.module.firmware"]["value"]
assert f["amdgpu.module.firmware_count"]["value"] == 3
assert f["amdgpu.module.version"]["value"] == modinfo(d, "version")[0] == "6.12.12"
print("ok: signed .ko.zst:", f["amdgpu.module.signer"]["value"], f["amdgpu.module.sig_hashalgo"]["value"])

# 2. unsigned, xz, Fedora's extra/
f = facts("unsigned-xz")
d = f"unsigned-xz/lib/modules/{rel}/extra"
assert f["amdgpu.module.path"]["value"] == f"/lib/modules/{rel}/extra/amdgpu.ko.xz", f["amdgpu.module.path"]
assert f["amdgpu.module.origin"]["value"] == "dkms"
assert f["amdgpu.module.signed"]["value"] is False, f["amdgpu.module.signed"]
assert modinfo(d, "signer") == [], modinfo(d, "signer")
assert f["amdgpu.module.signer"]["status"] == "missing", f["amdgpu.module.signer"]
assert f["amdgpu.module.firmware"]["value"] == modinfo(d, "firmware")
print("ok: unsigned .ko.xz in extra/")

# 3. inbox
f = facts("inbox")
assert f["amdgpu.module.origin"]["value"] == "inbox", f["amdgpu.module.origin"]
assert f["amdgpu.module.path"]["value"].endswith("/kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko.zst")
assert f["amdgpu.module.signed"]["value"] is False
print("ok: the kernel's own module")

# 4. links out of the root: the path is known, the file outside is never read.
for name in ("link-abs", "link-rel"):
    f = facts(name)
    assert f["amdgpu.module.path"]["status"] == "ok", f["amdgpu.module.path"]
    for k in ("amdgpu.module.signed", "amdgpu.module.signer", "amdgpu.module.firmware"):
        assert f[k]["status"] == "missing", (name, k, f[k])
    assert "inside the root" in f["amdgpu.module.signed"]["reason"], f["amdgpu.module.signed"]
    print(f"ok: {name}: {f['amdgpu.module.signed']['reason']}")

f = facts("link-in")
assert f["amdgpu.module.signed"]["value"] is True, f["amdgpu.module.signed"]
assert "-> /var/lib/dkms/amdgpu/amdgpu.ko.zst" in f["amdgpu.module.signed"]["source"], f["amdgpu.module.signed"]
print("ok: a link inside the root is followed there")

f = facts("builtin")
assert open(os.path.join(tmp, "builtin/modinfo.n")).read().strip() == "(builtin)"
assert f["amdgpu.module.origin"]["value"] == "builtin", f["amdgpu.module.origin"]
assert f["amdgpu.module.path"]["status"] == "missing", f["amdgpu.module.path"]
print("ok: built in, as modinfo -n says (builtin)")

# 5.-7. bad files: error facts with the reason, never a pass.
for name, words in (("truncated", "libkmod could not read"), ("garbage", "libkmod could not read"),
                    ("bomb", bomb_reason), ("huge", "over the 128 MiB bound"), ("no-index", "modules.dep.bin")):
    f = facts(name)
    s = f["amdgpu.module.signed"]
    want = "missing" if name == "no-index" else "error"
    assert s["status"] == want, (name, s)
    assert words in s["reason"], (name, s)
    assert f["amdgpu.module.firmware"]["status"] == want, (name, f["amdgpu.module.firmware"])
    assert f["probe.module_file.status"]["status"] == "ok", f["probe.module_file.status"]
    print(f"ok: {name}: {s['status']}: {s['reason']}")
PY

# check: the rule on the unsigned and the signed DKMS build, with Secure Boot on. The signed
# machine's kernel log (a capture) shows no rejection; a copy of it shows the kernel refusing a
# module whose key it does not have, with amdgpu not loaded: the key is not enrolled.
mkdir -p signed-zst/.halo
echo "[    0.000000] secureboot: Secure boot enabled" >signed-zst/.halo/dmesg.txt
cp -a signed-zst not-enrolled
echo "[    5.120394] Loading of module with unavailable key is rejected" >>not-enrolled/.halo/dmesg.txt
verdict() {
  local code=0
  "$bin" check --root "$tmp/$1" --no-runtime --only dkms-module-unsigned --format json >"$tmp/$1.check.json" || code=$?
  python3 - "$tmp/$1.check.json" "$2" "$3" "$code" "$4" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
[r] = [r for r in report["results"] if r["id"] == "dkms-module-unsigned"]
assert r["status"] == sys.argv[2], r
assert sys.argv[5] in r["message"], r
assert sys.argv[4] == sys.argv[3], ("exit code", sys.argv[4], r)
print("ok: dkms-module-unsigned", r["status"], "-", r["message"])
PY
}
verdict unsigned-xz fail 1 "a DKMS build that is not signed"
verdict signed-zst pass 0 "signed by 'DKMS module signing key'"
verdict not-enrolled fail 1 "the key it is signed with is not enrolled"
verdict garbage error 0 "amdgpu.module.signed"   # could not be checked: no failure, exit 0
echo "ok: module_signature"
