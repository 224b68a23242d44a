// Prints moby's default seccomp profile (the one Docker applies, github.com/moby/profiles/seccomp) as JSON, in
// Docker's profile format: rules with capability, architecture and kernel conditions, which localkube's pod
// runner resolves for each container whose securityContext asks for seccompProfile RuntimeDefault.
package main

import (
	"encoding/json"
	"os"

	"github.com/moby/profiles/seccomp"
)

func main() {
	out := json.NewEncoder(os.Stdout)
	out.SetIndent("", " ")
	if err := out.Encode(seccomp.DefaultProfile()); err != nil {
		os.Stderr.WriteString("encoding the default seccomp profile: " + err.Error() + "\n")
		os.Exit(1)
	}
}
