package adptest_test

import (
	"fmt"
	"log"

	"github.com/agentprotocols/go-sdk/adp/adptest"
	"github.com/agentprotocols/go-sdk/identity"
)

// The fixture's agents have fixed keys, so their Agent IDs (and every
// signature they make at a given clock) are the same in every run.
func ExampleSeed() {
	key, err := identity.NewKeyFromSeed(adptest.Seed("alice"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(adptest.Agents[2], key.AgentID())
	// Output: alice did:agent:Zs1gi5KLiOUODv6qM_rxxDzv4HKUsLh-n-CrpqPPdjM
}
