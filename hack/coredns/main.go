// Command coredns is CoreDNS with the plugins cluster DNS needs (as a kubeadm/kind cluster configures it),
// built from the Go module proxy. See docs/local-kubernetes.md.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

// The order CoreDNS runs these plugins in: the order of its own plugin.cfg, restricted to those above.
var directives = []string{"reload", "ready", "health", "errors", "log", "loadbalance", "cache", "kubernetes", "loop"}

func init() {
	dnsserver.Directives = directives
}

func main() {
	coremain.Run()
}
