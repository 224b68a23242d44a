// olm-validate DIR: validates the OLM bundle in DIR (manifests/ and metadata/) with operator-framework's own
// validators, the set `operator-sdk bundle validate --select-optional suite=operatorframework` runs. Prints one
// line per finding and exits 1 when any validator reports an error (warnings are printed, not fatal).
package main

import (
	"fmt"
	"os"

	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/validation"
	interfaces "github.com/operator-framework/api/pkg/validation/interfaces"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: olm-validate BUNDLE_DIR")
		os.Exit(2)
	}
	bundle, err := manifests.GetBundleFromDir(os.Args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "error: cannot read the bundle in %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
	validators := append(interfaces.Validators{}, validation.DefaultBundleValidators...)
	validators = append(validators, validation.OperatorHubV2Validator, validation.StandardCapabilitiesValidator,
		validation.StandardCategoriesValidator, validation.GoodPracticesValidator)
	objects := append(bundle.ObjectsToValidate(), map[string]string{"k8s-version": os.Getenv("OLM_K8S_VERSION")})
	failed := false
	for _, result := range validators.Validate(objects...) {
		for _, e := range result.Errors {
			failed = true
			fmt.Printf("error: %s: %s\n", result.Name, e.Error())
		}
		for _, w := range result.Warnings {
			fmt.Printf("warning: %s: %s\n", result.Name, w.Error())
		}
	}
	if failed {
		os.Exit(1)
	}
	fmt.Printf("bundle %s is valid\n", bundle.Name)
}
