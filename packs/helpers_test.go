package packs

import (
	"context"
	"errors"
	"testing"

	"github.com/agentprotocols/go-sdk/identity"
)

// Realistic identifiers that satisfy the kernel patterns.
const (
	hashA  = "GDt8oHZQfQ3jl5ZUfyNxKZu07yAJdDYuaw_jf_JjLYs"
	hashB  = "cJg9aS9kgYX-vm1vpgdjCuaGSffm_EW5RoAJbAbk-ts"
	agentA = "did:agent:6kpsY-KcUgq-9VB7Ey7F-ZVHdq6-vnuSQh7qaRRG0iw"
	agentB = "did:agent:Reviewer-0000000000000000000000000000000000"
)

func mustDecl(t testing.TB, s string) Declaration {
	t.Helper()
	d, err := ParseDeclaration([]byte(s))
	if err != nil {
		t.Fatalf("ParseDeclaration(%s): %v", s, err)
	}
	return d
}

func mustDeclare(t testing.TB, r *Registry, seq int64, decls ...string) {
	t.Helper()
	var ds []Declaration
	for _, s := range decls {
		ds = append(ds, mustDecl(t, s))
	}
	if err := r.Declare(context.Background(), seq, ds...); err != nil {
		t.Fatalf("Declare at %d: %v", seq, err)
	}
}

// wantCode fails unless err is an *identity.Error with the given code.
func wantCode(t testing.TB, err error, code identity.Code) *identity.Error {
	t.Helper()
	var ie *identity.Error
	if !errors.As(err, &ie) {
		t.Fatalf("got %v (%T), want an *identity.Error with code %s", err, err, code)
	}
	if ie.Code != code {
		t.Fatalf("got code %s (%v), want %s", ie.Code, err, code)
	}
	if !errors.Is(err, identity.NewError(code, "")) {
		t.Fatalf("errors.Is does not match code %s", code)
	}
	return ie
}

// wantLocation fails unless err carries a *SchemaError at the given
// instance location.
func wantLocation(t testing.TB, err error, instance string) *SchemaError {
	t.Helper()
	var se *SchemaError
	if !errors.As(err, &se) {
		t.Fatalf("%v: no *SchemaError", err)
	}
	if se.InstanceLocation != instance {
		t.Fatalf("%v: instance location %q, want %q", err, se.InstanceLocation, instance)
	}
	return se
}
