package adp_test

import (
	"fmt"

	"github.com/agentprotocols/go-sdk/adp"
)

// A renderer reads built-in payloads through their typed views.
func ExampleParsePayload() {
	v, err := adp.ParsePayload(adp.TypeMessageCreate, []byte(`{"content_type":"text/plain","content":"I support this proposal."}`))
	if err != nil {
		fmt.Println("not a valid message.create payload:", err)
		return
	}
	switch p := v.(type) {
	case *adp.Message:
		fmt.Println(p.ContentType, string(p.Content))
	case *adp.Notice:
		fmt.Println("reason:", p.Reason)
	}
	// Output: text/plain "I support this proposal."
}
