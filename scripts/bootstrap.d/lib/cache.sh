# Pruning the cache's keyed entries (sourced; the caller defines log()). Each change to what an entry is built
# from adds a new one (images-<hash> takes a few hundred MB, venv-<hash> over a GB), so a machine that runs
# many commits would fill its disk with entries nobody uses. An entry's mtime is its last use (the caller
# touches the one it uses); an entry is removed once it is neither among the three used last nor used in the
# last two hours, which leaves alone whatever another checkout's run started with.
# Usage: prune_cache_entries <cache dir> <prefix> <the entry in use>
prune_cache_entries() {
  local cache="$1" prefix="$2" current="$3" rank=0 entry
  touch "$current"
  while IFS= read -r entry; do
    rank=$((rank + 1))
    if [ "$entry" = "$current" ] || [ "$rank" -le 3 ]; then
      continue
    fi
    if [ -n "$(find "$entry" -maxdepth 0 -mmin +120)" ]; then
      rm -rf "$entry" && log "removed $entry (not used for two hours)"
    fi
  done < <(ls -1dt "$cache/$prefix"-* 2>/dev/null)
}
