// Command standin is a schema-only Terraform provider for offline checks:
// it serves the schemas of a real provider (generated from a CDKTF
// provider package's .jsii manifest), so that tofu init, validate and
// test in plan mode run with no network and no cloud account.
//
//	standin gen MANIFEST.jsii schema.json   write the schema file
//	standin                                  serve (as tofu runs it), reading
//	                                         schema.json beside the binary
package main

import (
	"fmt"
	"os"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6/tf6server"
)

func main() {
	if len(os.Args) == 4 && os.Args[1] == "gen" {
		if err := generate(os.Args[2], os.Args[3]); err != nil {
			fmt.Fprintln(os.Stderr, "standin gen:", err)
			os.Exit(1)
		}
		return
	}
	s, err := loadServer()
	if err != nil {
		fmt.Fprintln(os.Stderr, "standin:", err)
		os.Exit(1)
	}
	if err := tf6server.Serve("registry.opentofu.org/sluicehq/standin", func() tfprotov6.ProviderServer { return s }); err != nil {
		fmt.Fprintln(os.Stderr, "standin:", err)
		os.Exit(1)
	}
}
