# shellcheck shell=bash disable=SC2034
# Access to /dev/kfd and the render nodes (set before: UDEV_RULES: the rule file's content or
# empty; FIX_USER and FIX_GROUPS, or empty). ROCr opens /dev/kfd and /dev/dri/renderD*; they
# belong to group render (mode 0660) and the user joins render and video.
if [ -n "$UDEV_RULES" ]; then
  put_file "${ROOT}/etc/udev/rules.d/70-halo-doctor-gpu.rules" "$UDEV_RULES"
  if [ "$WROTE" -eq 1 ]; then
    live udevadm control --reload-rules
    live udevadm trigger --subsystem-match=kfd --subsystem-match=drm
  fi
fi
if [ -n "$FIX_USER" ]; then
  GROUP_FILE="${ROOT}/etc/group"
  ADD=()
  for g in "${FIX_GROUPS[@]}"; do
    if ! awk -F: -v g="$g" '$1 == g { f = 1 } END { exit f ? 0 : 1 }' "$GROUP_FILE"; then
      say "warning: group $g does not exist on this system; skipped"
    elif awk -F: -v g="$g" -v u="$FIX_USER" \
      '$1 == g { n = split($4, m, ","); for (i = 1; i <= n; i++) if (m[i] == u) f = 1 } END { exit f ? 0 : 1 }' \
      "$GROUP_FILE"; then
      say "$FIX_USER is already in $g"
    else
      ADD+=("$g")
    fi
  done
  if [ "${#ADD[@]}" -gt 0 ]; then
    backup "$GROUP_FILE"
    tool usermod -aG "$(IFS=,; printf '%s' "${ADD[*]}")" "$FIX_USER"
    CHANGED=1
  fi
  say "note: $FIX_USER must log out and back in (or reboot) before the new groups apply"
fi
