package adpconform_test

import (
	"context"
	"fmt"

	"github.com/agentprotocols/go-sdk/adpconform"
	"github.com/agentprotocols/go-sdk/adphost/adphosttest"
)

// Run the envelope checks against a host and print each verdict; the exit
// status of a CI job would be rep.OK.
func ExampleRun() {
	host, srv, err := adphosttest.NewUnstarted(nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	srv.Start()
	defer srv.Close()
	defer host.Close()

	rep, err := adpconform.Run(context.Background(), srv.URL, &adpconform.Options{
		AllowLoopbackHTTP: true, // a loopback development host
		Only:              []string{"envelope.hash", "envelope.signature", "envelope.nonce"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, res := range rep.Results {
		if res.Verdict != adpconform.Skip {
			fmt.Printf("§24.%d %s %s: %s\n", res.Item, res.Level, res.ID, res.Verdict)
		}
	}
	fmt.Println("conforms:", rep.OK)
	// Output:
	// §24.1 MUST envelope.hash: pass
	// §24.1 MUST envelope.signature: pass
	// §24.1 MUST envelope.nonce: pass
	// conforms: true
}
