# shellcheck shell=bash disable=SC2034
# sysctl (set before: SYSCTL_CONTENT, SYSCTL_KEYS, SYSCTL_VALUES). A drop-in in /etc/sysctl.d keeps
# the setting across reboots (sysctl.d(5)); the running kernel gets it with sysctl -p when its
# value differs (read from /proc/sys, where a key's dots are slashes).
SYSCTL_FILE="${ROOT}/etc/sysctl.d/90-halo-doctor.conf"
put_file "$SYSCTL_FILE" "$SYSCTL_CONTENT"
SYSCTL_LIVE_OK=1
for i in "${!SYSCTL_KEYS[@]}"; do
  cur=$(cat "${ROOT}/proc/sys/${SYSCTL_KEYS[$i]//.//}" 2>/dev/null || true)
  [ "$cur" = "${SYSCTL_VALUES[$i]}" ] || SYSCTL_LIVE_OK=0
done
if [ -n "$ROOT" ]; then
  say "not applied to the running system (HALO_FIX_ROOT is set): sysctl -p /etc/sysctl.d/90-halo-doctor.conf"
elif [ "$SYSCTL_LIVE_OK" -eq 0 ]; then
  live sysctl -p /etc/sysctl.d/90-halo-doctor.conf
  CHANGED=1
else
  say "the running kernel already has these values"
fi
