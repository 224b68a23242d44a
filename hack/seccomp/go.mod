module bookie-fleet/hack/seccomp

go 1.24

require github.com/moby/profiles/seccomp v0.3.0

require (
	github.com/opencontainers/runtime-spec v1.2.1 // indirect
	golang.org/x/sys v0.33.0 // indirect
)
