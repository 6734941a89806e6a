module github.com/agentprotocols/go-sdk

go 1.26

require (
	filippo.io/edwards25519 v1.2.0 // indirect
	filippo.io/mostly-harmless/ed25519vectors v0.0.0-20210322192420-30a2d7243a94 // indirect
	github.com/go-json-experiment/json v1.27.2 // indirect
	github.com/golang-jwt/jwt/v5 v5.3.1 // indirect
	github.com/gowebpki/jcs v1.0.2 // indirect
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3 // indirect
	golang.org/x/text v0.14.0 // indirect
)
