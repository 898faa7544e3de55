#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Capture bundles keep no secret and, unless --no-redact, no identity (issue 32, docs/security.md).
# A copy of a real fixture root (tests/fixtures/mi300x-host-tuned: 8 MI300X, kfd topology) gets
# planted secrets of every class: the tokens of Hugging Face, W&B, AWS, GitHub and OpenAI, user:pass@
# in https_proxy, ALL_PROXY and PIP_INDEX_URL, random token-shaped values under unknown names, a
# credential URL and a credential-named variable among the variables a probe reads, DMI serials
# and product_uuid, PCI and NVMe serial numbers, GPU unique_id files, kfd unique_id lines (also as
# ROCr's GPU-<hex> in ROCR_VISIBLE_DEVICES and in the kernel log), a Kubernetes service-account
# token, and a user name in passwd, group, SUDO_USER, MAIL, LOGNAME, USER, HOME and VIRTUAL_ENV.
# The real CLI captures it; the real `tar` unpacks it; `grep -F -r -a` looks for every planted value
# as bytes. Nothing is judged through the doctor's own model of the bundle.
set -u
bin=$(realpath "$1")
fixtures=$(realpath "$2")
TAR=/usr/bin/tar
GREP=/usr/bin/grep
if [ ! -x "$TAR" ] || [ ! -x "$GREP" ]; then echo "FAIL: /usr/bin/tar and /usr/bin/grep are needed"; exit 1; fi
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad() { echo "FAIL $*"; fail=1; }
token() { head -c 48 /dev/urandom | base64 -w0 | tr -dc 'A-Za-z0-9' | head -c "$1"; }

src=$fixtures/mi300x-host-tuned
root=$tmp/root
cp -a "$src" "$root"

# --- planted values: "class|value" lines; every value must be absent from the redacted bundle.
secrets=$tmp/secrets
user=zaphodbeeblebrox
hf=hf_$(token 34)
hub=hf_$(token 34)
wandb=$(token 40)
aws=$(token 30)/$(token 9)+
gh=ghp_$(token 36)
openai=sk-proj-$(token 40)
pw_https=Pr0xy-$(token 12)
pw_all=S0cks-$(token 12)
pw_pip=P1p-$(token 12)
pw_kept=M10pen-$(token 12)
kept_secret=$(token 32)
k8s=eyJhbGciOiJSUzI1NiJ9.$(token 60)
{
  echo "HF_TOKEN|$hf"
  echo "HUGGING_FACE_HUB_TOKEN|$hub"
  echo "WANDB_API_KEY|$wandb"
  echo "AWS_SECRET_ACCESS_KEY|$aws"
  echo "GITHUB_TOKEN|$gh"
  echo "OPENAI_API_KEY|$openai"
  echo "https_proxy password|$pw_https"
  echo "ALL_PROXY password|$pw_all"
  echo "PIP_INDEX_URL password|$pw_pip"
  echo "https_proxy user:pass|proxyuser:$pw_https"
  echo "kept variable's URL password|$pw_kept"
  echo "kept variable named like a credential|$kept_secret"
  echo "kubernetes service-account token|$k8s"
} >"$secrets"
env_file=$root/proc/self/environ
{
  tr '\0' '\n' <"$src/proc/self/environ" | grep -v '^HOME='
  echo "HOME=/home/$user"
  echo "USER=$user"
  echo "LOGNAME=$user"
  echo "SUDO_USER=$user"
  echo "MAIL=/var/mail/$user"
  echo "VIRTUAL_ENV=/home/$user/venvs/train"
  echo "HF_TOKEN=$hf"
  echo "HUGGING_FACE_HUB_TOKEN=$hub"
  echo "WANDB_API_KEY=$wandb"
  echo "AWS_ACCESS_KEY_ID=AKIA$(token 16)"
  echo "AWS_SECRET_ACCESS_KEY=$aws"
  echo "GITHUB_TOKEN=$gh"
  echo "OPENAI_API_KEY=$openai"
  echo "https_proxy=http://proxyuser:$pw_https@proxy.example.com:3128"
  echo "ALL_PROXY=socks5://proxyuser:$pw_all@proxy.example.com:1080/"
  echo "PIP_INDEX_URL=https://pipuser:$pw_pip@pypi.example.com/simple"
  # A variable a probe reads (MIOPEN_*) holding a credential URL, and one named like a secret.
  echo "MIOPEN_CUSTOM_CACHE_DIR=https://cacheuser:$pw_kept@cache.example.com/miopen"
  echo "NCCL_AUTH_TOKEN=$kept_secret"
  echo "HSA_OVERRIDE_GFX_VERSION=9.4.2"
} | tr '\n' '\0' >"$env_file"
# Random token-shaped values under names no probe reads (shapes of real keys: base64, hex, JWT).
for i in $(seq 1 12); do
  case $((i % 3)) in
  0) v=$(token 40) ;;
  1) v=$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n') ;;
  2) v=eyJ$(token 20).$(token 30) ;;
  esac
  name=X$(token 6 | tr '[:lower:]' '[:upper:]')_$i
  printf '%s=%s\0' "$name" "$v" >>"$env_file"
  echo "unknown variable $name|$v" >>"$secrets"
done
# Another process's environment holds the same (no probe reads one; if one ever does, it is an
# environ like /proc/self/environ).
mkdir -p "$root/proc/1"
cp "$env_file" "$root/proc/1/environ"
# DMI, PCI, NVMe, GPU and kfd identifiers.
mkdir -p "$root/sys/class/dmi/id" "$root/sys/class/nvme/nvme0"
for f in product_serial board_serial chassis_serial board_asset_tag chassis_asset_tag; do
  v=$(echo "$f" | cut -c1-3 | tr '[:lower:]' '[:upper:]')$(token 12)
  echo "$v" >"$root/sys/class/dmi/id/$f"
  echo "DMI $f|$v" >>"$secrets"
done
uuid=$(cat /proc/sys/kernel/random/uuid)
echo "$uuid" >"$root/sys/class/dmi/id/product_uuid"
echo "DMI product_uuid|$uuid" >>"$secrets"
nvme=S6$(token 12 | tr '[:lower:]' '[:upper:]')
echo "$nvme" >"$root/sys/class/nvme/nvme0/serial"
echo "NVMe serial|$nvme" >>"$secrets"
ids=()
n=0
for props in "$root"/sys/class/kfd/kfd/topology/nodes/*/properties; do
  grep -q '^gfx_target_version [1-9]' "$props" || continue
  n=$((n + 1))
  # A 64-bit unique_id (amdgpu reads it from the PSP/SMU), distinct per GPU, with high bits set.
  dec=$(printf '%u' "0x$(printf 'f%03x' "$n")$(head -c 6 /dev/urandom | od -An -tx1 | tr -d ' \n')")
  hex=$(printf '%016x' "$dec")
  echo "unique_id $dec" >>"$props"
  ids+=("$dec")
  echo "kfd unique_id (decimal) of GPU $n|$dec" >>"$secrets"
  echo "the same as hex|$hex" >>"$secrets"
done
[ "$n" -ge 2 ] || { echo "FAIL: the fixture has fewer than two GPU nodes"; exit 1; }
first_hex=$(printf '%016x' "${ids[0]}")
printf 'ROCR_VISIBLE_DEVICES=GPU-%s\0' "$first_hex" >>"$env_file"
for dev in "$root"/sys/bus/pci/devices/*/; do
  if [ ! -f "$dev/class" ] || ! grep -q '^0x03' "$dev/class"; then continue; fi
  s=PCI$(token 10)
  echo "$s" >"$dev/serial_number"
  echo "PCI serial_number $(basename "$dev")|$s" >>"$secrets"
  h=$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')
  echo "$h" >"$dev/unique_id"
  echo "GPU unique_id file $(basename "$dev")|$h" >>"$secrets"
done
mkdir -p "$root/var/run/secrets/kubernetes.io/serviceaccount"
printf '%s' "$k8s" >"$root/var/run/secrets/kubernetes.io/serviceaccount/token"
echo "amdgpu 0000:0c:00.0: amdgpu: RAS: unique id 0x$first_hex serial $nvme" >"$root/.halo/dmesg.txt"
# The user: a second human account (uid 1001), in passwd, group and the environment.
echo "$user:x:1001:1001:Zaphod Beeblebrox:/home/$user:/bin/bash" >>"$root/etc/passwd"
sed -i -E "s/^(render:[^:]*:[^:]*:.*)$/\1,$user/; s/:,$user$/:$user/" "$root/etc/group"
echo "$user:x:1001:" >>"$root/etc/group"
echo "user name|$user" >>"$secrets"
planted=$(wc -l <"$secrets")

# --- capture, unpack with tar, byte search.
"$bin" capture --root "$root" --no-runtime -o "$tmp/red.tar.gz" >"$tmp/out" 2>"$tmp/err" ||
  { bad "capture failed: $(cat "$tmp/err")"; exit 1; }
[ -s "$tmp/err" ] && bad "capture (redacted) wrote to stderr: $(cat "$tmp/err")"
mkdir "$tmp/red"
"$TAR" -xzf "$tmp/red.tar.gz" -C "$tmp/red" || bad "tar cannot unpack the bundle"
found=0
while IFS='|' read -r what value; do
  if "$GREP" -F -r -a -l -- "$value" "$tmp/red" >"$tmp/hits"; then
    bad "$what ('$value') is in the bundle: $(sed "s|$tmp/red/||" "$tmp/hits" | tr '\n' ' ')"
    found=$((found + 1))
  fi
done <"$secrets"
# The bundle is not empty by accident: the environment is there, with the kept values.
env_out=$tmp/red/proc/self/environ
[ -f "$env_out" ] || bad "no proc/self/environ in the bundle"
tr '\0' '\n' <"$env_out" >"$tmp/env.txt"
for want in "HF_TOKEN=<dropped>" "AWS_SECRET_ACCESS_KEY=<dropped>" "https_proxy=<dropped>" \
  "PIP_INDEX_URL=<dropped>" "SUDO_USER=<dropped>" "MAIL=<dropped>" "HOME=/home/user2" \
  "HSA_OVERRIDE_GFX_VERSION=9.4.2" "PATH=/usr/local/bin:/usr/bin:/bin" \
  "VIRTUAL_ENV=/home/user2/venvs/train" "NCCL_AUTH_TOKEN=<masked>" \
  "MIOPEN_CUSTOM_CACHE_DIR=https://<masked>@cache.example.com/miopen"; do
  "$GREP" -qxF -- "$want" "$tmp/env.txt" || bad "the bundle's environment lacks the line '$want'"
done
# Stable pseudonyms: distinct per GPU, and the first GPU's kfd unique_id (decimal) and its
# GPU-<hex> in ROCR_VISIBLE_DEVICES name the same pseudonym.
cat "$tmp/red"/sys/class/kfd/kfd/topology/nodes/*/properties | sed -n 's/^unique_id //p' >"$tmp/pseud"
[ "$(wc -l <"$tmp/pseud")" = "$n" ] || bad "expected $n unique_id lines in the bundle, found $(wc -l <"$tmp/pseud")"
[ "$(sort -u "$tmp/pseud" | wc -l)" = "$n" ] || bad "the GPUs' pseudonyms are not distinct: $(tr '\n' ' ' <"$tmp/pseud")"
first_pseud=$(sed -n 's/^unique_id //p' "$tmp/red/$(cd "$root" && grep -l "^unique_id ${ids[0]}\$" sys/class/kfd/kfd/topology/nodes/*/properties)")
"$GREP" -qxF "ROCR_VISIBLE_DEVICES=GPU-$(printf '%016x' "$first_pseud")" "$tmp/env.txt" ||
  bad "ROCR_VISIBLE_DEVICES does not name the first GPU's pseudonym $first_pseud: $("$GREP" ROCR_ "$tmp/env.txt")"
# Replay still reaches the same verdicts' exit code.
"$bin" check --root "$root" --no-runtime --format json >/dev/null
want_code=$?
"$bin" check --bundle "$tmp/red.tar.gz" --no-runtime --format json >/dev/null
[ $? = "$want_code" ] || bad "check --bundle exit code differs from check --root ($want_code)"

# --- --no-redact: warns, keeps identities (so the test above can fail), never the secrets.
"$bin" capture --root "$root" --no-runtime --no-redact -o "$tmp/raw.tar.gz" >/dev/null 2>"$tmp/err" ||
  bad "capture --no-redact failed"
if ! "$GREP" -q "warning: --no-redact keeps the host name, user names" "$tmp/err" ||
  ! "$GREP" -q "serial numbers and UUIDs" "$tmp/err"; then
  bad "capture --no-redact gives no warning naming what it keeps"
fi
mkdir "$tmp/raw"
"$TAR" -xzf "$tmp/raw.tar.gz" -C "$tmp/raw" || bad "tar cannot unpack the --no-redact bundle"
"$GREP" -F -r -a -q -- "${ids[0]}" "$tmp/raw" || bad "--no-redact lost the kfd unique_id (the byte search would not see it)"
"$GREP" -F -r -a -q -- "$user" "$tmp/raw" || bad "--no-redact lost the user name"
while IFS='|' read -r what value; do
  case $what in kfd* | "the same as hex" | "user name" | DMI* | NVMe* | PCI* | GPU*) continue ;; esac
  "$GREP" -F -r -a -q -- "$value" "$tmp/raw" && bad "--no-redact bundle holds $what"
done <"$secrets"

# --- capture --help says what it does.
"$bin" capture --help >"$tmp/help"
for want in "<dropped>" "no probe reads" "serial numbers and UUIDs" "--no-redact"; do
  "$GREP" -qF -- "$want" "$tmp/help" || bad "capture --help does not say '$want'"
done

echo "$planted planted values ($(cut -d'|' -f1 "$secrets" | sed -E 's/ (of GPU|[0-9a-f]{4}:).*//' | sort -u | wc -l) kinds), $found found in the redacted bundle"
[ $fail = 0 ] && echo "all bundle secret checks passed"
exit $fail
