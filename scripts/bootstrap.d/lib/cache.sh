# The cache's entries (sourced; the caller defines log()): whether a virtualenv can be used where it is, and
# pruning the keyed entries.

# A virtualenv works only at the path it was made at: the first line of each of its scripts (pip's, mypy's) names
# that path. One moved or copied there (a cache restored under another HOME, say) still runs its python, but
# every script fails with "cannot execute: required file not found". Python records the path it was made at in
# pyvenv.cfg's "command" line.
# Usage: venv_ready <dir>: made at <dir>, and complete (the caller touches <dir>/.complete once it is)
venv_ready() {
  local dir="$1" made
  [ -x "$dir/bin/python" ] && [ -f "$dir/.complete" ] || return 1
  made="$(grep -m1 '^command = ' "$dir/pyvenv.cfg" 2>/dev/null)" || return 1
  [[ "$made" == *" $dir" ]]
}

# Each change to what a keyed entry is built from adds a new one (images-<hash> takes a few hundred MB,
# venv-<hash> over a GB), so a machine that runs many commits would fill its disk with entries nobody uses. An
# entry's mtime is its last use (the caller touches the one it uses); an entry is removed once it is neither
# among the three used last nor used in the last two hours, which leaves alone whatever another checkout's run
# started with.
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
