package typeschema_test

import (
	"fmt"

	"github.com/agentprotocols/go-sdk/internal/typeschema"
)

// A type schema is admitted and compiled once per canonical form; payloads
// are decoded strictly and validated against it.
func ExampleCache_Compile() {
	cache := typeschema.NewCache(0)
	s, canon, err := cache.Compile([]byte(`{ "type":"object", "properties":{"score":{"type":"integer","maximum":5}} }`), typeschema.DefaultLimits)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(canon))
	v, err := typeschema.Decode([]byte(`{"score":7}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(s.Validate(v))
	_, _, err = cache.Compile([]byte(`{"$ref":"https://example.com/s.json"}`), typeschema.DefaultLimits)
	fmt.Println(err != nil)
	// Output:
	// {"properties":{"score":{"maximum":5,"type":"integer"}},"type":"object"}
	// at /score (/properties/score/maximum): maximum: got 7, want 5
	// true
}
