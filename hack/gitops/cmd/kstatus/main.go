// kstatus: reads a Kubernetes object (JSON) on stdin and prints, as JSON, the status that
// sigs.k8s.io/cli-utils' kstatus computes for it: the reading Flux's health checks and kpt use
// ({"status": "Current" | "InProgress" | "Failed" | ..., "message": ...}).
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

func main() {
	raw, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail("reading stdin: %v", err)
	}
	// apimachinery's own decoding: integers stay int64, as kstatus reads them from the API server.
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(raw); err != nil {
		fail("stdin is not a Kubernetes object: %v", err)
	}
	result, err := status.Compute(obj)
	if err != nil {
		fail("kstatus: %v", err)
	}
	out, _ := json.Marshal(map[string]string{"status": result.Status.String(), "message": result.Message})
	fmt.Println(string(out))
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "error: "+format+"\n", args...)
	os.Exit(1)
}
