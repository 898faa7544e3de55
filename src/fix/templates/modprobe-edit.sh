# shellcheck shell=bash disable=SC2034
# edit_modprobe FILE MODULE KEY=VALUE...: FILE, a modprobe.d file the user wrote (amd-ttm --set
# writes /etc/modprobe.d/ttm.conf), with each KEY on its `options MODULE` lines set to VALUE in
# place; a KEY no line has goes on the first such line (or a new one). Other lines stay as they
# are: no second file competes with the user's (modprobe.d(5): the last value read wins).
edit_modprobe() {
  local file=$1 module=$2 new
  shift 2
  if [ ! -f "$file" ]; then
    put_file "$file" "options $module $*"
    return 0
  fi
  new=$(awk -v m="$module" -v kvs="$*" '
    BEGIN { n = split(kvs, a, " "); for (i = 1; i <= n; i++) { k = a[i]; sub(/=.*/, "", k); key[i] = k; want[k] = a[i] } }
    $1 == "options" && $2 == m {
      line = "options " m
      for (i = 3; i <= NF; i++) {
        k = $i; sub(/=.*/, "", k)
        if (!(k in want)) line = line " " $i
        else if (!(k in done)) { line = line " " want[k]; done[k] = 1 }
      }
      if (!seen) { seen = 1; for (i = 1; i <= n; i++) if (!(key[i] in done)) { line = line " " want[key[i]]; done[key[i]] = 1 } }
      print line; next
    }
    { print }
    END { if (!seen) print "options " m " " kvs }' "$file")
  put_file "$file" "$new"
}
