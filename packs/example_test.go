package packs_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/agentprotocols/go-sdk/packs"
)

// A room imports two registered packs, lets observers vote, and defines a
// type of its own; events are then validated against that registry.
func Example() {
	decls, err := packs.ParseDeclarations([]byte(`[
		{"use": "adp:reactions/1.0"},
		{"use": "adp:deliberation/1.0", "types": ["poll.create", "poll.vote"],
		 "overrides": {"poll.vote": {"roles": ["moderator", "speaker", "observer"]}}},
		{"type": "review.finding", "kind": "message", "title": "Review finding",
		 "schema": {"type": "object", "required": ["severity", "summary"],
		            "properties": {"severity": {"enum": ["low", "medium", "high"]},
		                           "summary": {"type": "string", "minLength": 1}},
		            "additionalProperties": false}}
	]`))
	if err != nil {
		log.Fatal(err)
	}
	reg := packs.NewRegistry(nil)
	// The room.create record is seq 1.
	if err := reg.Declare(context.Background(), 1, decls...); err != nil {
		log.Fatal(err)
	}
	for _, d := range reg.Definitions() {
		fmt.Println(d.Type, d.Kind, d.AllowedRoles())
	}

	err = reg.Validate("reaction.create", []byte(`{"event_id":"GDt8oHZQfQ3jl5ZUfyNxKZu07yAJdDYuaw_jf_JjLYs","reaction":"agree","score":0.75}`))
	fmt.Println(err)

	err = reg.Validate("review.finding", []byte(`{"severity":"critical","summary":"retry loop starves the writer"}`))
	var se *packs.SchemaError
	fmt.Println(errors.Is(err, packs.ErrPayloadSchemaViolation), errors.As(err, &se), se.InstanceLocation)

	fmt.Println(errors.Is(reg.Validate("turn.update", []byte(`{}`)), packs.ErrTypeNotDefined))
	// Output:
	// reaction.create signal [moderator speaker observer]
	// poll.create message [moderator speaker]
	// poll.vote signal [moderator speaker observer]
	// review.finding message [moderator speaker]
	// <nil>
	// true true /severity
	// true
}

// The 2026-09-24 draft's registry: a pattern outside the type schema
// profile is invalid_type_schema, and a redefinition changing a type's
// kind is type_conflict.
func ExampleDraft() {
	d, err := packs.ParseDraft("2026-09-24")
	if err != nil {
		log.Fatal(err)
	}
	reg := packs.NewRegistry(&packs.Options{Draft: d})
	ctx := context.Background()

	_, err = d.ParseDeclaration([]byte(`{"type":"ticket.open","kind":"message","title":"Ticket",
		"schema":{"type":"object","properties":{"id":{"type":"string","pattern":"^T-\\d+$"}}}}`))
	fmt.Println(errors.Is(err, packs.ErrInvalidTypeSchema))

	decl, err := d.ParseDeclaration([]byte(`{"type":"ticket.open","kind":"message","title":"Ticket",
		"schema":{"type":"object","properties":{"id":{"type":"string","pattern":"^T-[0-9]+$"}}}}`))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(reg.Declare(ctx, 1, decl))

	claim, err := d.ParseDeclaration([]byte(`{"type":"ticket.open","kind":"control","title":"Ticket","schema":{}}`))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(errors.Is(reg.Declare(ctx, 2, claim), packs.ErrTypeConflict))
	fmt.Println(d.ValidTypeName("message.edit"), packs.Draft20260704.ValidTypeName("message.edit"))
	// Output:
	// true
	// <nil>
	// true
	// false true
}
