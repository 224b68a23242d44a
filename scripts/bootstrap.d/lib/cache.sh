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

# buildah's own store keeps each earlier build of an image, unnamed, once the name moves to the new build, and
# grows with every change to the images' sources; the layouts in images-<hash> are what runs, so those go.
# Usage: prune_unnamed_images <buildah's global options: --root, --runroot, --storage-driver>
prune_unnamed_images() {
  local before after
  before="$(buildah "$@" images -q --filter dangling=true 2>/dev/null | wc -l)"
  [ "$before" -gt 0 ] || return 0
  if ! buildah "$@" rmi --prune >/dev/null 2>&1; then
    log "could not remove the build store's unnamed images (buildah rmi --prune failed)"
    return 0
  fi
  after="$(buildah "$@" images -q --filter dangling=true 2>/dev/null | wc -l)"
  log "removed $((before - after)) unnamed earlier builds from the build store"
}
