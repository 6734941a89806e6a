package strictjson_test

import (
	"fmt"
	"log"

	"github.com/agentprotocols/go-sdk/internal/strictjson"
)

// Canonicalize gives the one byte form that is hashed and signed; Validate
// refuses what a lenient decoder would read two ways.
func Example() {
	canon, err := strictjson.Canonicalize([]byte(`{"b": [1.50, "\u00e9"], "a": 1e2}`))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(canon))
	fmt.Println(strictjson.Validate([]byte(`{"a":1,"a":2}`)) != nil)
	fmt.Println(strictjson.Validate([]byte(`{"nonce":9007199254740992}`)))
	// Output:
	// {"a":100,"b":[1.5,"é"]}
	// true
	// json at /nonce: number outside ±(2^53−1)
}
