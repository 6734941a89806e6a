package b64url_test

import (
	"fmt"

	"github.com/agentprotocols/go-sdk/internal/b64url"
)

func Example() {
	b, err := b64url.Decode("AAE")
	fmt.Println(b, err)
	_, err = b64url.Decode("AAF") // non-zero trailing bits: a second spelling of the same bytes
	fmt.Println(err)
	// Output:
	// [0 1] <nil>
	// not canonical unpadded base64url
}
